-- `storekeeper dev`'s clock, kept with the facts it dated: a restarted dev server resumes this far ahead of the real
-- time instead of going back to it (facts signed months ahead would then lie in its future). One row, written only by
-- `simulate advance` against `storekeeper dev`; a production database never has one.
CREATE TABLE dev_clock (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    offset_milliseconds bigint NOT NULL CHECK (offset_milliseconds >= 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);
