-- The query executed at this step:
ALTER TABLE iceberg_catalog.pyspark_iceberg_table
ALTER COLUMN schema_evol_added_col_1 TYPE BIGINT;