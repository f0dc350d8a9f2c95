-- Every listed table takes its place in the row sequence as rows are inserted.
CREATE TRIGGER residents_seq BEFORE INSERT ON residents
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX residents_seq_order ON residents (tenant_id, seq);
CREATE TRIGGER complaints_seq BEFORE INSERT ON complaints
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX complaints_seq_order ON complaints (tenant_id, seq);
CREATE TRIGGER announcements_seq BEFORE INSERT ON announcements
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX announcements_seq_order ON announcements (tenant_id, seq);
CREATE TRIGGER notifications_seq BEFORE INSERT ON notifications
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX notifications_seq_order ON notifications (tenant_id, resident_id, seq);
