-- The emulator's scripted outcomes (spec/sim_rules.h, docs/emulator.md):
-- one list for every server of an HA set; the scheduler leader reads it as
-- it plans jobs.
CREATE TABLE emulator_rules (
    one   boolean PRIMARY KEY DEFAULT true CHECK (one),
    rules jsonb NOT NULL DEFAULT '[]'
);
INSERT INTO emulator_rules DEFAULT VALUES;
