-- Memberships take their place in the row sequence as they are inserted.
CREATE TRIGGER memberships_seq BEFORE INSERT ON memberships
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX memberships_seq_order ON memberships (tenant_id, seq);
