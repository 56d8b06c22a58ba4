// Mistakes the declarations must catch: tests/api/browser.rs compiles this file beside
// example.ts and expects tsc to refuse each line marked "error", and nothing else.

import { Gatehouse } from "@gatehouse/client";

const gh = new Gatehouse({ refreshMarginSeconds: "60" }); // error: a number
export async function mistakes(): Promise<void> {
  await gh.login("ada@example.com"); // error: the password is missing
  const token: number = await gh.getAccessToken(); // error: a string
  await gh.logout("everywhere"); // error: not a scope
  const status: string = (await gh.fetch("/api/orders")).status; // error: a number
  await gh.deleteAccount(); // error: the password is missing
  console.log(token, status);
}
