-- Invoices and payments take their place in the row sequence as they are inserted.
CREATE TRIGGER invoices_seq BEFORE INSERT ON invoices
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX invoices_seq_order ON invoices (tenant_id, seq);
CREATE TRIGGER payments_seq BEFORE INSERT ON payments
    FOR EACH ROW EXECUTE FUNCTION {own}next_row_seq();
CREATE INDEX payments_seq_order ON payments (tenant_id, invoice_id, seq);
