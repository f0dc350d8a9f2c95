-- A batch of writes is one statement on PostgreSQL (meridian_store::batch):
-- its last part calls this with the first write that had to change a row
-- and changed none, and the error undoes the whole statement — the claim a
-- keyed write completes was taken over, say, and its row must not be
-- written. NULL: every such write changed a row, and the statement stands.
CREATE FUNCTION {own}meridian_refuse(refused BIGINT) RETURNS BIGINT AS $$
BEGIN
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'MR001',
            MESSAGE = 'meridian_refused:' || refused
                || ' (a batched write that had to change a row changed none: nothing of the batch was written)';
    END IF;
    RETURN 0;
END
$$ LANGUAGE plpgsql;
