-- The databases and roles of a Yedi deployment on PostgreSQL 15 (issue 31, docs/postgres.md): one role
-- and one database per service, the role owning its database (it creates its tables and, for
-- AccountService, the trusted extension pg_trgm), no superuser, and no other role may connect to it.
-- Safe to run again: it creates what is missing and sets the passwords anew.
--
-- Run as a superuser with psql, the passwords given in psql variables, either read from files (one line
-- each, e.g. `openssl rand -hex 24`; the same files become each service's YEDI_DATABASE_PASSWORD_FILE):
--
--   sudo -u postgres psql -v ON_ERROR_STOP=1 -v secrets=/path/to/folder -f deploy/postgres/databases.sql
--       (the folder holds account.database-password, content.database-password, … readable by postgres)
--
-- or set before the file on standard input (deploy/postgres-dev.sh does this: no password on a
-- command line that `ps` shows):
--
--   \set account_password '…'   \set content_password '…'   \set booking_password '…'   \set chat_password '…'
--
-- Databases are UTF8 with the C.UTF-8 locale whatever the cluster's default: Hangul needs a UTF-8 ctype
-- for pg_trgm, and the C collation sorts text as SQLite does (designer search, cursors).
\set ON_ERROR_STOP 1
-- The passwords are in this session's statements: keep them out of the server's log.
SET log_statement = 'none';
SET log_min_error_statement = 'panic';

\if :{?secrets}
\set account_password `cat :'secrets'/account.database-password`
\set content_password `cat :'secrets'/content.database-password`
\set booking_password `cat :'secrets'/booking.database-password`
\set chat_password `cat :'secrets'/chat.database-password`
\endif

SELECT :{?account_password} AND :{?content_password} AND :{?booking_password} AND :{?chat_password}
  AS have_passwords \gset
\if :have_passwords
\else
DO $$ BEGIN RAISE EXCEPTION 'databases.sql: no passwords: pass -v secrets=FOLDER, or \set each <service>_password first'; END $$;
\endif

-- The four services and their passwords, for this session only.
CREATE TEMPORARY VIEW yedi_service (role, password) AS VALUES
  ('yedi_account', :'account_password'), ('yedi_content', :'content_password'),
  ('yedi_booking', :'booking_password'), ('yedi_chat', :'chat_password');
-- A missing or empty file reads as an empty password, which PostgreSQL takes as "no password".
SELECT NOT EXISTS (SELECT FROM yedi_service WHERE length(password) < 16) AS passwords_long_enough \gset
\if :passwords_long_enough
\else
DO $$ BEGIN RAISE EXCEPTION 'databases.sql: every password must be 16 characters or more'; END $$;
\endif

SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE', role)
FROM yedi_service WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = role) \gexec
-- Also for a role that existed: a run of this file is how the passwords are changed.
SELECT format('ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L', role, password)
FROM yedi_service \gexec

SELECT format('CREATE DATABASE %I OWNER %I ENCODING %L LOCALE %L TEMPLATE template0', role, role, 'UTF8', 'C.UTF-8')
FROM yedi_service WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = role) \gexec
-- Only the owner connects: no other role reaches a service's database.
SELECT format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', role) FROM yedi_service \gexec
