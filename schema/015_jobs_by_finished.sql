-- 015_jobs_by_finished: finished jobs by the time they finished.
--
-- The engine deletes the records of jobs finished longer ago than
-- jobRecordRetentionSeconds, oldest first, a batch at a time. Without this
-- index each batch would scan the whole jobs table. Only finished jobs
-- (finished_ms > 0, set once by the write that makes the phase final, 006)
-- are in it, so jobs still at work cost it nothing.
CREATE INDEX jobs_by_finished ON jobs (finished_ms) WHERE finished_ms > 0;
