package schemasync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/starrocks-txn/benthos-starrocks/internal/schema"
	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// Running one statement of a plan and waiting for its schema-change job
// (docs/notes/starrocks-protocol.md §11.1–§11.3). A statement is never sent
// blindly twice: after a lost reply or a timeout the table and its jobs
// are read again, and the plan is made afresh from what they show.

// settleError is a statement whose outcome is unknown (its reply was lost,
// it timed out, or a schema change of the table was already running): the
// caller reads the table again.
type settleError struct{ error }

// refusedError is a statement StarRocks refused. It changed nothing; the
// caller reads the table again once (another writer, or an operator, may
// have made the change) and otherwise poisons with StarRocks's words.
type refusedError struct{ error }

// jobHistory is how many of a table's newest jobs are read.
const jobHistory = 20

func (b *Book) apply(ctx context.Context, k tableKey, s step) error {
	var before map[string]bool
	if !s.created {
		jobs, err := b.meta.AlterJobs(ctx, k.db, k.table, jobHistory)
		if err != nil {
			return settleError{fmt.Errorf("reading the schema-change jobs of %s: %w", k, err)}
		}
		if j, ok := running(jobs); ok {
			// One schema change per table at a time: wait for the one
			// running (ours from before a restart, or an operator's).
			if err := b.await(ctx, k, s, nil, j.ID); err != nil {
				return err
			}
			return settleError{fmt.Errorf("a schema change of %s was running", k)}
		}
		before = make(map[string]bool, len(jobs))
		for _, j := range jobs {
			before[j.ID] = true
		}
	}
	b.conf.Log.Infof("Applying to %s (schema_evolution: evolve): %s", k, s.stmt)
	err := b.meta.ExecDDL(ctx, k.db, s.stmt)
	var de *starrocks.DDLError
	switch {
	case errors.As(err, &de):
		switch {
		case s.created && starrocks.IsUnknownDatabase(de):
			sql, serr := schema.CreateDatabaseSQL(k.db)
			if serr != nil {
				return serr
			}
			if err := b.meta.ExecDDL(ctx, k.db, sql); err != nil && !isRefusal(err) {
				return settleError{err}
			} else if err != nil {
				return refusedError{fmt.Errorf("the database %s does not exist and creating it was refused: %w; create it yourself", k.db, err)}
			}
			return settleError{fmt.Errorf("the database %s was created", k.db)}
		case notNormal(de):
			return settleError{de}
		}
		return refusedError{fmt.Errorf("StarRocks refused the schema change of %s: %w", k, err)}
	case err != nil:
		return settleError{err}
	}
	b.m.change(k, s.kind)
	if s.created {
		return nil
	}
	return b.await(ctx, k, s, before, "")
}

// await polls the table's jobs until the job of s — id, or else the newest
// one not in before — is final; a job that never shows (a change StarRocks
// made at once) ends the wait once no job of the table runs. CANCELLED is
// an error with the job's message.
func (b *Book) await(ctx context.Context, k tableKey, s step, before map[string]bool, id string) error {
	start := b.conf.Now()
	lastReport := start
	delay := b.conf.PollMin
	defer func() { b.m.waited(k, b.conf.Now().Sub(start)) }()
	for {
		jobs, err := b.meta.AlterJobs(ctx, k.db, k.table, jobHistory)
		if err == nil {
			ours, found := pick(jobs, before, id)
			switch {
			case found && ours.State == starrocks.JobFinished:
				return nil
			case found && ours.State == starrocks.JobCancelled:
				msg := ours.Msg
				if msg == "" {
					msg = "no reason given"
				}
				return refusedError{fmt.Errorf("StarRocks cancelled the schema change of %s (job %s: %s): %s; apply it yourself, or fix what it says, and the stalled source transaction goes on", k, ours.ID, msg, s.stmt)}
			case !found:
				if _, busy := running(jobs); !busy {
					return nil
				}
			}
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
		if now := b.conf.Now(); now.Sub(lastReport) >= b.conf.ReportEvery {
			lastReport = now
			b.conf.Log.Infof("Waiting %v for the schema change of %s (%s) before loading the rows that need it; other tables and partitions go on", now.Sub(start).Round(time.Second), k, s.stmt)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, b.conf.PollMax)
	}
}

// pick finds the job of a statement among jobs, newest first: the one with
// id, or the newest whose id is not in before (nil before: none).
func pick(jobs []starrocks.AlterJob, before map[string]bool, id string) (starrocks.AlterJob, bool) {
	for _, j := range jobs {
		if id != "" {
			if j.ID == id {
				return j, true
			}
			continue
		}
		if before != nil && !before[j.ID] {
			return j, true
		}
	}
	return starrocks.AlterJob{}, false
}

// running returns a job of the table that is not final.
func running(jobs []starrocks.AlterJob) (starrocks.AlterJob, bool) {
	for _, j := range jobs {
		if !j.Final() {
			return j, true
		}
	}
	return starrocks.AlterJob{}, false
}

// notNormal reports the refusal of an ALTER while another schema change
// of the table runs: "Table[t]'s state(SCHEMA_CHANGE) is not NORMAL. Do not
// allow doing ALTER ops" (docs/notes/starrocks-protocol.md §11.2).
func notNormal(err error) bool {
	return strings.Contains(err.Error(), "is not NORMAL")
}

func isRefusal(err error) bool {
	var de *starrocks.DDLError
	return errors.As(err, &de)
}
