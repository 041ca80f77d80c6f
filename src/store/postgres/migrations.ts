/**
 * The Postgres schema of backpackflow, as versioned migrations run on first use: each in its own transaction, under a
 * transaction-scoped advisory lock, so that several processes opening the same database at once apply each version
 * exactly once (the others wait for the lock, then find it applied). Applied versions are recorded in
 * `backpackflow.migrations`; a database with a version this code does not know (a newer backpackflow) is refused.
 */
import type { Sql } from 'postgres';
import { StoreError } from '../errors.js';

/** One schema version. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The migrations, in order. Never edit one that has shipped: add the next. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'runs, events, keyframes',
    sql: `
      create table backpackflow.runs (
        session_key text not null,
        run_id text not null,
        created_at timestamptz not null default now(),
        -- The projection (RunMeta, JSON as the file store writes it), redacted, updated in the same statement as the step's events.
        meta text,
        -- Fencing: every writer that takes the run increments the token; a commit names its token.
        writer_token bigint not null default 0,
        lease_owner text,
        lease_expires_at timestamptz,
        primary key (session_key, run_id)
      );
      -- One row per log line, as the file store would write it (chain hashes included): keyed by (run, seq), so a
      -- second writer's insert of a seq already stored fails.
      create table backpackflow.events (
        session_key text not null,
        run_id text not null,
        seq bigint not null,
        line integer not null,
        sealed boolean not null,
        body text not null,
        primary key (session_key, run_id, seq),
        unique (session_key, run_id, line),
        foreign key (session_key, run_id) references backpackflow.runs on delete cascade
      );
      create table backpackflow.keyframes (
        session_key text not null,
        run_id text not null,
        step integer not null,
        -- Sealed JSON (hash/sealed.ts), as checkpoint/<step>.json holds it.
        body text not null,
        primary key (session_key, run_id, step),
        foreign key (session_key, run_id) references backpackflow.runs on delete cascade
      );
    `,
  },
  {
    version: 2,
    name: 'run documents, run queue',
    sql: `
      -- What a run is built from (its flow config, its recipe), as the file store keeps flow.json and run.recipe.json.
      create table backpackflow.run_documents (
        session_key text not null,
        run_id text not null,
        name text not null,
        body text not null,
        primary key (session_key, run_id, name),
        foreign key (session_key, run_id) references backpackflow.runs on delete cascade
      );
      -- Runs waiting for a worker: claimed with FOR UPDATE SKIP LOCKED; a claim lasts until claimed_until, renewed
      -- while the worker runs it, so a killed worker's run is claimed again once that passes.
      create table backpackflow.queue (
        session_key text not null,
        run_id text not null,
        -- 'start' (a new run, with its input) or 'resume' (with the answer of a waiting run, when there is one).
        kind text not null check (kind in ('start', 'resume')),
        payload text,
        state text not null default 'queued' check (state in ('queued', 'claimed', 'done')),
        enqueued_at timestamptz not null default clock_timestamp(),
        attempts integer not null default 0,
        claimed_by text,
        claimed_until timestamptz,
        finished_at timestamptz,
        outcome text,
        primary key (session_key, run_id),
        foreign key (session_key, run_id) references backpackflow.runs on delete cascade
      );
      create index queue_ready on backpackflow.queue (enqueued_at) where state <> 'done';
      -- Live tails: every step's commit notifies 'backpackflow_events' with session/run.
    `,
  },
  {
    version: 3,
    name: 'memory',
    sql: `
      -- Long-term memory: items (JSON as the file store writes them, redacted) and their terms (tokenized as the
      -- file store's keyword index does), from which search ranks by BM25 exactly as the file store does.
      create table backpackflow.memory_items (
        id text primary key,
        body text not null,
        length integer not null
      );
      create table backpackflow.memory_terms (
        term text not null,
        id text not null references backpackflow.memory_items on delete cascade,
        tf integer not null,
        primary key (term, id)
      );
      create index memory_terms_id on backpackflow.memory_terms (id);
    `,
  },
  {
    version: 4,
    name: 'commit_step',
    sql: `
      -- A step's commit (run-store.ts, PostgresRunWriter.commit), as one call of one prepared statement with few,
      -- plain parameters: the projection update fenced by the writer's token and, only when the fence held, the
      -- step's lines inserted and the commit announced. The call is the statement's whole transaction, so the three
      -- are one transaction. Returns false (nothing changed) when the token is no longer the run's; a seq or line
      -- another writer stored first fails with a unique violation (23505). p_lines: the lines joined by a newline
      -- (a log line never holds one; a count that does not match p_seqs is refused); p_seqs: their seqs, and
      -- p_sealed: the 1-based positions of the lines that carry a chain hash, both comma-separated.
      -- p_lazy: durability 'never', the commit does not wait for the server's disk (connection.ts: asyncCommit).
      create function backpackflow.commit_step(p_session text, p_run text, p_token bigint, p_meta text, p_ends boolean,
        p_lease_ms integer, p_first_line integer, p_seqs text, p_sealed text, p_lines text, p_lazy boolean,
        p_channel text) returns boolean
      -- Built-ins and operators resolve in pg_catalog only, whatever the caller's search_path holds (the tables are
      -- named with their schema). A SET clause restores only the setting it names: synchronous_commit, set below for
      -- the transaction, stays set until the commit.
      language plpgsql set search_path = pg_catalog, pg_temp as $fn$
      declare
        seqs bigint[] := string_to_array(p_seqs, ',')::bigint[];
        inserted bigint;
      begin
        if p_lazy then
          perform set_config('synchronous_commit', 'off', true);
        end if;
        update backpackflow.runs set meta = p_meta,
          lease_owner = case when p_ends then null else lease_owner end,
          lease_expires_at = case when p_ends then null else now() + p_lease_ms * interval '1 millisecond' end
        where session_key = p_session and run_id = p_run and writer_token = p_token;
        if not found then
          return false;
        end if;
        insert into backpackflow.events (session_key, run_id, seq, line, sealed, body)
        select p_session, p_run, seqs[t.n], p_first_line + t.n::integer - 1, t.n = any (string_to_array(p_sealed, ',')::integer[]), t.body
        from unnest(string_to_array(p_lines, E'\\n')) with ordinality as t(body, n);
        get diagnostics inserted = row_count;
        if inserted <> cardinality(seqs) then
          raise exception 'backpackflow.commit_step: % lines for % seqs', inserted, cardinality(seqs);
        end if;
        perform pg_notify(p_channel, p_session || '/' || p_run);
        return true;
      end
      $fn$;
    `,
  },
  {
    version: 5,
    name: 'one row per step, notify only tailed runs',
    sql: `
      -- A step's lines in one row (a step's commit inserts one row, not one per line: fewer tuples, index entries and
      -- WAL per step), keyed by the run and the number of its first line: a writer whose view of the log is stale
      -- (its lease taken over) inserts at the line where the batch committed after that view starts, so its insert
      -- fails (fencing) as the per-line key (run, seq) did. body: the lines as the file store writes them, joined by
      -- a newline (a log line never holds one); last_seq: the seq of its last line.
      create table backpackflow.event_batches (
        session_key text not null,
        run_id text not null,
        first_line integer not null,
        last_line integer not null,
        last_seq bigint not null,
        body text not null,
        primary key (session_key, run_id, first_line),
        check (last_line >= first_line),
        foreign key (session_key, run_id) references backpackflow.runs on delete cascade
      );
      -- The rows of version 4, grouped into batches that each end at a sealed line (or before a missing line, so
      -- that a deleted row is still reported as missing), in their order.
      insert into backpackflow.event_batches (session_key, run_id, first_line, last_line, last_seq, body)
      select session_key, run_id, min(line), max(line), (array_agg(seq order by line desc))[1], string_agg(body, E'\\n' order by line)
      from (
        select e.*,
          count(*) filter (where sealed) over (partition by session_key, run_id order by line rows between unbounded preceding and 1 preceding) as sealed_before,
          line - row_number() over (partition by session_key, run_id order by line) as gap
        from backpackflow.events e
      ) as lines
      group by session_key, run_id, sealed_before, gap;
      drop function backpackflow.commit_step(text, text, bigint, text, boolean, integer, integer, text, text, text, boolean, text);
      drop table backpackflow.events;
      -- The log line by line, for queries by hand (read only).
      create view backpackflow.event_lines as
        select b.session_key, b.run_id, b.first_line + t.n::integer - 1 as line, t.body
        from backpackflow.event_batches b, unnest(string_to_array(b.body, E'\\n')) with ordinality as t(body, n);
      -- Live tails (PostgresRunStore.onCommits) register here, renewing it while they listen; a step's commit
      -- announces itself only while a tail is registered. The commit reads it from the row it updates, so a tail's
      -- registration and a commit are ordered by the row's lock: a commit either precedes it (and the tail, reading
      -- the log after registering, sees it) or sees it (and announces itself).
      alter table backpackflow.runs add column tailed_until timestamptz;
      -- A step's commit (run-store.ts, PostgresRunWriter.commit), as one call of one prepared statement with few,
      -- plain parameters: the projection update fenced by the writer's token and, only when the fence held, the
      -- step's lines inserted as one row and, when the run is tailed, the commit announced. The call is the
      -- statement's whole transaction, so they are one transaction. Returns false (nothing changed) when the token
      -- is no longer the run's; lines another writer stored first fail with a unique violation (23505). p_lines: the
      -- lines joined by a newline, p_line_count of them (a text that holds another count is refused); p_last_seq:
      -- the seq of the last. p_lazy: durability 'never', the commit does not wait for the server's disk
      -- (connection.ts: asyncCommit).
      create function backpackflow.commit_step(p_session text, p_run text, p_token bigint, p_meta text, p_ends boolean,
        p_lease_ms integer, p_first_line integer, p_line_count integer, p_last_seq bigint, p_lines text, p_lazy boolean,
        p_channel text) returns boolean
      -- Built-ins and operators resolve in pg_catalog only, whatever the caller's search_path holds (the tables are
      -- named with their schema). A SET clause restores only the setting it names: synchronous_commit, set below for
      -- the transaction, stays set until the commit.
      language plpgsql set search_path = pg_catalog, pg_temp as $fn$
      declare
        tailed boolean;
      begin
        if p_line_count < 1 or length(p_lines) - length(replace(p_lines, E'\\n', '')) <> p_line_count - 1 then
          raise exception 'backpackflow.commit_step: the lines are not % lines', p_line_count;
        end if;
        if p_lazy then
          perform set_config('synchronous_commit', 'off', true);
        end if;
        update backpackflow.runs set meta = p_meta,
          lease_owner = case when p_ends then null else lease_owner end,
          lease_expires_at = case when p_ends then null else now() + p_lease_ms * interval '1 millisecond' end
        where session_key = p_session and run_id = p_run and writer_token = p_token
        returning tailed_until > now() into tailed;
        if not found then
          return false;
        end if;
        insert into backpackflow.event_batches (session_key, run_id, first_line, last_line, last_seq, body)
        values (p_session, p_run, p_first_line, p_first_line + p_line_count - 1, p_last_seq, p_lines);
        if tailed then
          perform pg_notify(p_channel, p_session || '/' || p_run);
        end if;
        return true;
      end
      $fn$;
    `,
  },
  {
    version: 6,
    name: 'fencing tokens never repeat',
    sql: `
      -- Every writer's fencing token (run-store.ts, PostgresRunWriter.open) is drawn from this sequence, so that a
      -- token is never handed out twice, not even to a run deleted and started again under the same id: a writer of
      -- the deleted run, stalled past the delete, holds a token the new run's row never has, and every write it
      -- makes is refused. Starts after every token handed out before it.
      create sequence backpackflow.writer_tokens as bigint;
      select setval('backpackflow.writer_tokens', greatest(1, (select max(writer_token) from backpackflow.runs)));
    `,
  },
  {
    version: 7,
    name: 'run queue: lapsed claims',
    sql: `
      -- How many of a job's claims ran out (their worker died or stalled without finishing it); a job with
      -- maxAttempts of them is given up (queue.ts). attempts counts every claim, given back or not.
      alter table backpackflow.queue add column lapses integer not null default 0;
    `,
  },
];

const LOCK = `select pg_advisory_xact_lock(hashtext('backpackflow.migrations'))`;

/** Applies the migrations the database lacks; see the module comment. Returns the versions applied by this call. */
export async function migrate(sql: Sql, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const applied: number[] = [];
  for (;;) {
    const done = await sql.begin(async (tx) => {
      await tx.unsafe(LOCK);
      await tx.unsafe(`create schema if not exists backpackflow;
        create table if not exists backpackflow.migrations (version integer primary key, name text not null, applied_at timestamptz not null default now())`);
      const rows = await tx<{ version: number }[]>`select version from backpackflow.migrations order by version`;
      const have = new Set(rows.map((r) => r.version));
      const known = new Set(migrations.map((m) => m.version));
      const unknown = [...have].filter((v) => !known.has(v));
      if (unknown.length > 0) {
        throw new StoreError(`the database has backpackflow schema version ${Math.max(...unknown)}, which this backpackflow does not know (it knows up to ${Math.max(...known)}): upgrade backpackflow`);
      }
      const next = migrations.find((m) => !have.has(m.version));
      if (next === undefined) return true;
      await tx.unsafe(next.sql);
      await tx`insert into backpackflow.migrations (version, name) values (${next.version}, ${next.name})`;
      applied.push(next.version);
      return false;
    });
    if (done) return applied;
  }
}
