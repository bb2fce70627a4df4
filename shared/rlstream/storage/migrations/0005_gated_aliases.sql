-- rlstream registry, version 5: aliases move only on the gate's word, and a promotion
-- compares-and-sets the champion the candidate was evaluated against.
--
-- evaluations.baseline_champion: the champion model id the candidate was compared with
-- (NULL: there was no champion, the baseline was the base model). A promotion of the
-- evaluation installs the candidate only while the champion is still that model.
-- evaluations.refusal / refused_at: why the gate's `promote` was not applied (the champion
-- moved meanwhile: the run needs re-evaluation against the new champion).

ALTER TABLE evaluations
    ADD COLUMN baseline_champion text,
    ADD COLUMN refusal text,
    ADD COLUMN refused_at timestamptz;

-- Before this version baseline_model held the champion's id, or the base model's name when
-- there was none: a baseline that is a registered model of the agent was its champion.
UPDATE evaluations e SET baseline_champion = e.baseline_model
WHERE EXISTS (
    SELECT 1 FROM models m WHERE m.model_id = e.baseline_model AND m.agent = e.agent
);

-- `challenger` used to follow every evaluated candidate, rejected ones included. It now
-- names only a candidate the gate said promote; a challenger the gate did not pass goes.
DELETE FROM model_aliases a
USING models m
WHERE a.alias = 'challenger' AND m.model_id = a.model_id
  AND coalesce(m.metadata ->> 'gate', '') <> 'passed';
