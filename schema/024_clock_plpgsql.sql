-- tp_now() and tp_at() (022) in PL/pgSQL: a SQL function that reads a table
-- is not inlined, and is planned again at every call; PL/pgSQL keeps its
-- plan for the session. They stand in column defaults and in the functions
-- that stamp job time; the server's own statements write the clock out
-- (store/store_pg.h, TP_NOW), planned once with the statement.
CREATE OR REPLACE FUNCTION tp_now() RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
    t timestamptz;
BEGIN
    SELECT c.base_emu + (now() - c.base_real) * c.speed INTO t FROM emulator_clock c;
    RETURN coalesce(t, now());
END $$;

CREATE OR REPLACE FUNCTION tp_at(t timestamptz) RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
    r timestamptz;
BEGIN
    SELECT c.base_emu + (t - c.base_real) * c.speed INTO r FROM emulator_clock c;
    RETURN coalesce(r, t);
END $$;
