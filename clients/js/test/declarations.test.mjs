// The TypeScript declarations (gatehouse.d.ts) and the typed example (test-support/example.ts)
// against the module itself: every export and every public member is declared, nothing declared
// is missing from the module, and the example uses every member. tsc then compiles the example
// against the declarations of the packed library (tests/api/browser.rs).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import * as library from "../gatehouse.js";

const read = (path) => readFileSync(new URL(path, import.meta.url), "utf8");
const declarations = read("../gatehouse.d.ts");
const example = read("../test-support/example.ts");

/** The members declared in `export class NAME … { … }` of the declarations. */
function declaredMembers(name) {
  const start = declarations.indexOf(`export class ${name} `);
  assert.notEqual(start, -1, `gatehouse.d.ts declares class ${name}`);
  const body = declarations.slice(start, declarations.indexOf("\n}\n", start));
  const members = new Set();
  for (const line of body.split("\n").slice(1)) {
    const m = /^  (?:readonly )?([A-Za-z]\w*)\s*[(<:?]/.exec(line);
    if (m) members.add(m[1]);
  }
  return members;
}

/** The public members of a class as the module has them (methods, getters). */
const runtimeMembers = (cls) => new Set(Object.getOwnPropertyNames(cls.prototype).filter((n) => n !== "constructor"));

test("every export of the module is declared, and only those", () => {
  const declared = new Set([...declarations.matchAll(/^export (?:class|function|const) (\w+)/gm)].map((m) => m[1]));
  assert.deepEqual([...declared].sort(), Object.keys(library).sort());
});

test("the Gatehouse class is declared member for member", () => {
  const declared = declaredMembers("Gatehouse");
  declared.delete("constructor");
  assert.deepEqual([...declared].sort(), [...runtimeMembers(library.Gatehouse)].sort());
});

test("GatehouseError's fields are declared", () => {
  const error = new library.GatehouseError("x", { status: 400, code: "VALIDATION_ERROR" });
  const fields = Object.keys(error).concat("name");
  const declared = declaredMembers("GatehouseError");
  for (const field of fields) assert.ok(declared.has(field), `${field} declared`);
});

test("the typed example uses every member of Gatehouse", () => {
  for (const member of runtimeMembers(library.Gatehouse)) {
    assert.match(example, new RegExp(`\\.${member}\\b`), `example.ts uses ${member}`);
  }
  for (const name of Object.keys(library)) {
    assert.match(example, new RegExp(`\\b${name}\\b`), `example.ts imports ${name}`);
  }
});
