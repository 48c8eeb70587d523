-- A short turn's vector also reads the turn before it (docs/retrieval.md, "Episodes"): "Yes, last
-- Tuesday!" alone means nothing, which is why a fact written as a conversation's turn is embedded
-- after the turn before it. A recorded turn that fits in the model's window together with the turn
-- before it (both transcripts, one line each) gets one more vector window over that pair: its
-- window -1, `read_episode_id` naming the turn it read (NULL on the windows of its own transcript).
-- Search reads an episode's best window, so a turn is found by what it says or by what it answers.
--
-- The window goes with the turn it read: deleting that turn deletes it (ON DELETE CASCADE, here in
-- the database, whatever deletes the turn), and the turn is embedded again after its new neighbour
-- (adapters/postgres/episode_context.py). Turns recorded before this migration get theirs from
-- `memory-engine reembed` (a migration cannot embed).
ALTER TABLE episode_windows ADD COLUMN read_episode_id text REFERENCES episodes(id) ON DELETE CASCADE;
CREATE INDEX episode_windows_read_idx ON episode_windows (read_episode_id) WHERE read_episode_id IS NOT NULL;
