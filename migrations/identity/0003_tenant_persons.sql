-- What a tenant sees of a person is that tenant's own: the name its admin
-- gave and an id of its own (person_id, sent as `user_id` and used as the
-- actor id). The platform-wide `users` row (one per email) stays internal,
-- so adding alice@x to tenant B shows B nothing entered under tenant A.
ALTER TABLE memberships ADD COLUMN person_id TEXT;
ALTER TABLE memberships ADD COLUMN name TEXT;

-- Existing members keep the name they were shown until now.
UPDATE memberships
   SET name = (SELECT u.name FROM users u WHERE u.id = memberships.user_id);

-- A user's first membership keeps the id its tenant already knows (and may
-- have linked a resident to); every other membership gets a fresh UUID v4.
UPDATE memberships
   SET person_id = user_id
 WHERE id = (SELECT MIN(m2.id) FROM memberships m2 WHERE m2.user_id = memberships.user_id);
UPDATE memberships
   SET person_id = lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
       || substr(lower(hex(randomblob(2))), 2) || '-'
       || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2) || '-'
       || lower(hex(randomblob(6)))
 WHERE person_id IS NULL;

CREATE UNIQUE INDEX memberships_person ON memberships (person_id);
