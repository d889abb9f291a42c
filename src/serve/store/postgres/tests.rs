//! Tests of the PostgreSQL store against a real server (LT_TEST_POSTGRES_URL).
