-- rlstream system of record, version 1.
-- Conventions: ids are text (conversation ids come from producers; rollout ids and
-- dataset ids are hashes), agent '' means "no agent logged" so it can sit in primary keys,
-- every jsonb column holds the pydantic model's JSON dump.

CREATE TABLE transcripts (
    conversation_id  text PRIMARY KEY,
    task_key         text,
    agent            text,
    redacted         boolean NOT NULL,
    source_kind      text NOT NULL,
    source_topic     text,
    source_partition integer,
    source_offset    bigint,
    source_file      text,
    source_line      integer,
    body             jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX transcripts_agent_task ON transcripts (agent, task_key);

CREATE TABLE datasets (
    dataset_id   text PRIMARY KEY,
    agent        text NOT NULL,
    reward_spec  text NOT NULL,
    manifest     jsonb NOT NULL,
    path         text NOT NULL,
    n_rollouts   integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE rollouts (
    rollout_id       text PRIMARY KEY,
    conversation_id  text NOT NULL REFERENCES transcripts (conversation_id),
    task_key         text NOT NULL,
    agent            text NOT NULL,
    reward_spec      text NOT NULL,
    score            double precision NOT NULL CHECK (score >= 0 AND score <= 1),
    passed           boolean NOT NULL,
    results          jsonb NOT NULL,
    features         jsonb NOT NULL,
    released_in      text REFERENCES datasets (dataset_id),
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rollouts_pending ON rollouts (agent, reward_spec, task_key)
    WHERE released_in IS NULL;
CREATE INDEX rollouts_released_in ON rollouts (released_in) WHERE released_in IS NOT NULL;
CREATE INDEX rollouts_conversation ON rollouts (conversation_id);

-- A rollout is released at most once: once released_in is set it can never change.
-- The conditional UPDATE in Store.mark_released is the normal guard; this trigger makes
-- the rule hold for every writer, including a hand-written UPDATE.
CREATE FUNCTION rollouts_release_once() RETURNS trigger AS $$
BEGIN
    IF OLD.released_in IS NOT NULL AND NEW.released_in IS DISTINCT FROM OLD.released_in THEN
        RAISE EXCEPTION 'rollout % already released in %', OLD.rollout_id, OLD.released_in
            USING ERRCODE = 'unique_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER rollouts_release_once BEFORE UPDATE OF released_in ON rollouts
    FOR EACH ROW EXECUTE FUNCTION rollouts_release_once();

CREATE TABLE groups (
    agent        text NOT NULL,
    reward_spec  text NOT NULL,
    task_key     text NOT NULL,
    n            integer NOT NULL DEFAULT 0,
    passes       integer NOT NULL DEFAULT 0,
    sum_score    double precision NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent, reward_spec, task_key),
    CHECK (passes >= 0 AND passes <= n)
);

CREATE TABLE lineage_edges (
    from_kind   text NOT NULL,
    from_id     text NOT NULL,
    to_kind     text NOT NULL,
    to_id       text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (from_kind, from_id, to_kind, to_id)
);
CREATE INDEX lineage_edges_reverse ON lineage_edges (to_kind, to_id);

-- Edges implied by the rows themselves (dataset -> rollout, rollout -> conversation), so
-- lineage never depends on a caller remembering to add them.
CREATE VIEW lineage_all AS
    SELECT from_kind, from_id, to_kind, to_id FROM lineage_edges
    UNION ALL
    SELECT 'dataset', released_in, 'rollout', rollout_id FROM rollouts
        WHERE released_in IS NOT NULL
    UNION ALL
    SELECT 'rollout', rollout_id, 'conversation', conversation_id FROM rollouts;

CREATE TABLE runs (
    run_id           text PRIMARY KEY,
    dataset_id       text REFERENCES datasets (dataset_id),
    agent            text NOT NULL,
    backend          text NOT NULL,
    method           text NOT NULL,
    status           text NOT NULL,
    image            text,
    argv_hash        text,
    backend_version  text,
    spec             jsonb NOT NULL DEFAULT '{}',
    metrics          jsonb NOT NULL DEFAULT '{}',
    artifact_path    text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX runs_dataset ON runs (dataset_id);

CREATE TABLE evaluations (
    evaluation_id    text PRIMARY KEY,
    run_id           text REFERENCES runs (run_id),
    agent            text NOT NULL,
    baseline_model   text NOT NULL,
    candidate_model  text NOT NULL,
    decision         text NOT NULL,
    report           jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX evaluations_run ON evaluations (run_id);

CREATE TABLE models (
    model_id    text PRIMARY KEY,
    agent       text NOT NULL,
    run_id      text REFERENCES runs (run_id),
    path        text,
    metadata    jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE model_aliases (
    agent       text NOT NULL,
    alias       text NOT NULL CHECK (alias IN ('champion', 'challenger')),
    model_id    text NOT NULL REFERENCES models (model_id),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent, alias)
);

CREATE TABLE promotions (
    promotion_id       text PRIMARY KEY,
    agent              text NOT NULL,
    model_id           text NOT NULL REFERENCES models (model_id),
    alias              text NOT NULL,
    previous_model_id  text,
    run_id             text REFERENCES runs (run_id),
    evaluation_id      text REFERENCES evaluations (evaluation_id),
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- Open turn-delta buffers: assembly state that must survive a restart of ingest.
CREATE TABLE turn_buffers (
    conversation_id  text PRIMARY KEY,
    turns            jsonb NOT NULL DEFAULT '[]',
    delta_keys       text[] NOT NULL DEFAULT '{}',
    meta             jsonb NOT NULL DEFAULT '{}',
    first_seen       timestamptz NOT NULL DEFAULT now(),
    last_seen        timestamptz NOT NULL DEFAULT now(),
    closed           boolean NOT NULL DEFAULT false,
    closed_at        timestamptz
);
CREATE INDEX turn_buffers_idle ON turn_buffers (last_seen) WHERE NOT closed;
