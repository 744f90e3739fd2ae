-- 009_intent_gate: the preemption gate of a Workload copy.
--
-- gantry creates its Workload copies (Kueue v1beta2) with the preemption
-- gate gantry.dev/preemption, which Kueue keeps closed until it is opened
-- in the copy's status: a closed copy is admitted only where it fits
-- without preempting. When no copy is admitted for a while, the engine
-- opens the gate of one copy at a time, at least preemptionGateSeconds
-- after the last one it opened, so that at most one cluster at a time
-- preempts running work for the job, not every candidate at once.
--
-- gate_opened_ms: when the engine decided to open this copy's gate (0:
-- closed), written before the status patch is sent, so that after a crash
-- the same copy's gate is opened again, never another's in its place, and
-- the next one waits its period from this time.
-- gate_refusal: the cluster's answer when it refused that patch (403
-- without RBAC on workloads/status, 422): the patch is not sent again at
-- this epoch. Existing rows get 0 and ''; adding the columns rewrites no row.
ALTER TABLE remote_intents ADD COLUMN gate_opened_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE remote_intents ADD COLUMN gate_refusal TEXT NOT NULL DEFAULT '';
