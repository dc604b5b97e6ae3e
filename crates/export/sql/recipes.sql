-- Three questions about a clrprof Parquet export, for DuckDB. Run from the
-- export's folder after creating a view per table, e.g.
--   CREATE VIEW objects AS SELECT * FROM 'objects.parquet';
-- (and likewise types, stacks, functions).

-- name: bytes_by_type
-- Bytes and objects allocated per type (types with equal names merged).
SELECT t.name AS type, sum(o.size) AS bytes, count(*) AS objects
FROM objects o JOIN types t ON t.id = o.type_id
GROUP BY t.name
ORDER BY bytes DESC, type
LIMIT 20;

-- name: top_functions_inclusive
-- Functions by the bytes allocated while they were on the stack (each
-- object counted once per function, however often it recurs).
WITH RECURSIVE per_stack AS (
    SELECT stack, sum(coalesce(size, 0)) AS bytes, count(*) AS objects
    FROM objects GROUP BY stack
), frames(stack, node) AS (
    SELECT stack, stack FROM per_stack WHERE stack <> 0
    UNION ALL
    SELECT f.stack, s.parent FROM frames f JOIN stacks s ON s.id = f.node WHERE s.parent <> 0
), on_stack AS (
    SELECT DISTINCT f.stack, s.function_id FROM frames f JOIN stacks s ON s.id = f.node
)
SELECT fn.id AS function_id, fn.name AS function,
       sum(p.bytes) AS inclusive_bytes, sum(p.objects) AS inclusive_objects
FROM on_stack d JOIN per_stack p USING (stack) JOIN functions fn ON fn.id = d.function_id
GROUP BY fn.id, fn.name
ORDER BY inclusive_bytes DESC, function_id
LIMIT 20;

-- name: died_in_gen2
-- What a GC reclaimed from generation 2, per type, with the mean age.
SELECT t.name AS type, count(*) AS objects, sum(o.size) AS bytes,
       avg(o.death_ms - o.alloc_ms) AS mean_age_ms
FROM objects o JOIN types t ON t.id = o.type_id
WHERE o.fate = 'gc' AND o.generation = 2
GROUP BY t.name
ORDER BY bytes DESC, type
LIMIT 20;

-- name: estimates_by_type
-- A sampled trace: what each type's samples stand for, with the 95% range
-- of the bytes (each row of objects is one sample standing for `weight`
-- objects; a figure resting on k samples lies between the two factors).
SELECT t.name AS type, count(*) AS samples, sum(o.weight) AS objects,
       sum(o.weight * o.size) AS bytes,
       sum(o.weight * o.size) * pow(1 - 1 / (9 * count(*)) - 1.959964 / (3 * sqrt(count(*))), 3) AS bytes_low,
       sum(o.weight * o.size) * (count(*) + 1) / count(*)
           * pow(1 - 1 / (9 * (count(*) + 1)) + 1.959964 / (3 * sqrt(count(*) + 1)), 3) AS bytes_high
FROM objects o JOIN types t ON t.id = o.type_id
GROUP BY t.name
ORDER BY bytes DESC, type
LIMIT 20;
