-- Who holds an unfinished claim: a value no other request holds. Completing
-- or releasing a claim matches it, so a request whose claim another host
-- took over (its clock judged the owner's deadline passed) commits nothing.
-- Records from before have no owner (''): they are completed, or end at
-- their deadline and are taken over.

ALTER TABLE {own}idempotency_records ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
