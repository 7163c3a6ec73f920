-- One role per service, each owning the schema of its name and nothing else (deploy/k8s/README.md,
-- "Postgres"). CloudNativePG runs this once, as superuser, in the application database right
-- after initdb (cluster.yaml, postInitApplicationSQLRefs); it is idempotent, so it can also be
-- run by hand with psql on an existing database. deploy/test/postgres-roles.test.ts runs it
-- against a fresh database and proves each role can use its own schema and no other.
--
-- The roles are created NOLOGIN: the Cluster's `managed.roles` gives each one LOGIN, its
-- password (Secret pcp-db-<service> in pcp-postgres) and its connection limit.

-- Nobody but a role granted below may connect, create schemas or temporary tables, or use the
-- public schema (PostgreSQL 15+ already keeps PUBLIC from creating in it).
DO $$ BEGIN EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database()); END $$;
REVOKE ALL ON SCHEMA public FROM PUBLIC;

DO $$ BEGIN CREATE ROLE pcp_gateway NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE pcp_stores NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE pcp_catalog NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE pcp_ordering NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
DO $$ BEGIN CREATE ROLE pcp_payments NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;

DO $$ BEGIN
  EXECUTE format(
    'GRANT CONNECT ON DATABASE %I TO pcp_gateway, pcp_stores, pcp_catalog, pcp_ordering, pcp_payments',
    current_database()
  );
END $$;

-- Each schema belongs to its service's role: its migrations (run as that role by the Job
-- pcp-migrate) create the tables, which the role then owns. No other role gets any right on it.
CREATE SCHEMA IF NOT EXISTS gateway AUTHORIZATION pcp_gateway;
CREATE SCHEMA IF NOT EXISTS stores AUTHORIZATION pcp_stores;
CREATE SCHEMA IF NOT EXISTS catalog AUTHORIZATION pcp_catalog;
CREATE SCHEMA IF NOT EXISTS ordering AUTHORIZATION pcp_ordering;
CREATE SCHEMA IF NOT EXISTS payments AUTHORIZATION pcp_payments;
ALTER SCHEMA gateway OWNER TO pcp_gateway;
ALTER SCHEMA stores OWNER TO pcp_stores;
ALTER SCHEMA catalog OWNER TO pcp_catalog;
ALTER SCHEMA ordering OWNER TO pcp_ordering;
ALTER SCHEMA payments OWNER TO pcp_payments;
REVOKE ALL ON SCHEMA gateway, stores, catalog, ordering, payments FROM PUBLIC;
