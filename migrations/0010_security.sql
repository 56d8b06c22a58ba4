-- Issue 22: a deleted account keeps no passkey. Deleting an account now deletes its passkeys and
-- passkey ceremonies with its other credentials; these are the rows earlier versions left behind
-- (the credential id, public key and name of an account that is gone, which signed in as far as
-- "account disabled").
DELETE FROM passkey_ceremonies WHERE user_id IN (SELECT id FROM users WHERE deleted_at IS NOT NULL);
DELETE FROM passkeys WHERE user_id IN (SELECT id FROM users WHERE deleted_at IS NOT NULL);
