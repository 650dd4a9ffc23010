package integration

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/starrocks-txn/benthos-starrocks/testkit"
)

// How the fleet test sees the group converge after a change: from the
// outside, as an operator would. The group is settled when the broker
// describes it Stable with exactly the members that run (a killed member
// stays listed until its session expires), every partition of the topic
// assigned to exactly one of them and each of them owning some (the
// cooperative protocol's first round can leave a member Stable with
// nothing). It is progressing again once every partition has moved past
// where it was when the group settled: its row in the output's progress
// table (exactly_once: what StarRocks holds) or, without one, its committed
// group offset.

// groupWatch reads the group's description and its partitions' progress.
type groupWatch struct {
	cl          *kgo.Client
	adm         *kadm.Client
	db          *sql.DB
	group       string
	topic       string
	partitions  int32
	pipelineID  string
	exactlyOnce bool
}

func newGroupWatch(brokers []string, db *sql.DB, group string, partitions int32, pipelineID string, exactlyOnce bool) (*groupWatch, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, fmt.Errorf("creating the group watch's Kafka client: %w", err)
	}
	return &groupWatch{cl: cl, adm: kadm.NewClient(cl), db: db, group: group, topic: topic,
		partitions: partitions, pipelineID: pipelineID, exactlyOnce: exactlyOnce}, nil
}

func (g *groupWatch) close() { g.cl.Close() }

// settled returns "" when the group is settled on exactly the members
// named in live, else what is not yet so.
func (g *groupWatch) settled(ctx context.Context, live map[string]bool) (string, error) {
	described, err := g.adm.DescribeGroups(ctx, g.group)
	if err != nil {
		return "", fmt.Errorf("describing the group: %w", err)
	}
	d, ok := described[g.group]
	if !ok {
		return "the group is not described", nil
	}
	if d.Err != nil {
		return "", fmt.Errorf("describing the group: %w", d.Err)
	}
	owner := map[int32]string{}
	var problems []string
	seen := map[string]bool{}
	for _, m := range d.Members {
		if seen[m.ClientID] {
			problems = append(problems, "member "+m.ClientID+" is listed twice")
		}
		seen[m.ClientID] = true
		if !live[m.ClientID] {
			problems = append(problems, "member "+m.ClientID+" is not running")
		}
		a, ok := m.Assigned.AsConsumer()
		n := 0
		if ok {
			for _, t := range a.Topics {
				if t.Topic != g.topic {
					continue
				}
				for _, p := range t.Partitions {
					if prev, dup := owner[p]; dup {
						problems = append(problems, fmt.Sprintf("partition %d assigned to %s and %s", p, prev, m.ClientID))
					}
					owner[p] = m.ClientID
					n++
				}
			}
		}
		if n == 0 {
			problems = append(problems, "member "+m.ClientID+" owns no partition")
		}
	}
	for _, id := range slices.Sorted(maps.Keys(live)) {
		if !seen[id] {
			problems = append(problems, "member "+id+" has not joined")
		}
	}
	if missing := int(g.partitions) - len(owner); missing > 0 {
		problems = append(problems, fmt.Sprintf("%d partitions unassigned", missing))
	}
	if d.State != "Stable" {
		problems = append([]string{"state " + d.State}, problems...)
	}
	return strings.Join(problems, "; "), nil
}

// progress returns every partition's position: its progress row's
// committed offset (exactly_once) or its committed group offset.
func (g *groupWatch) progress(ctx context.Context) (map[int32]int64, error) {
	out := map[int32]int64{}
	if !g.exactlyOnce {
		offs, err := g.adm.FetchOffsets(ctx, g.group)
		if err != nil {
			return nil, fmt.Errorf("fetching the group's offsets: %w", err)
		}
		for p := int32(0); p < g.partitions; p++ {
			if o, ok := offs.Lookup(g.topic, p); ok {
				out[p] = o.At
			}
		}
		return out, nil
	}
	rows, err := g.db.QueryContext(ctx, "SELECT source_partition, committed_offset FROM test.starrocks_txn_progress WHERE pipeline_id = ?", g.pipelineID)
	if err != nil {
		// The table appears with the first commit.
		if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "doesn't exist") {
			return out, nil
		}
		return nil, fmt.Errorf("reading the progress table: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var part string
		var off int64
		if err := rows.Scan(&part, &off); err != nil {
			return nil, fmt.Errorf("reading the progress table: %w", err)
		}
		tp, num, ok := strings.Cut(part, "/")
		if !ok || tp != g.topic {
			continue
		}
		p, err := strconv.ParseInt(num, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("progress row of partition %q: %w", part, err)
		}
		out[int32(p)] = off
	}
	return out, rows.Err()
}

// convergence is how long the group took to settle and to progress again
// after a change, from the change.
type convergence struct {
	settled, progressing time.Duration
	// stuck says what was still not so at the deadline ("" once
	// converged).
	stuck string
}

// converge waits, until from+within, for the group to settle on live and
// then for every partition to progress.
func (g *groupWatch) converge(from time.Time, live map[string]bool, within time.Duration) convergence {
	deadline := from.Add(within)
	var c convergence
	ask := func(f func(ctx context.Context) (bool, string)) bool {
		return testkit.Poll(time.Until(deadline), func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ok, why := f(ctx)
			if !ok {
				c.stuck = why
			}
			return ok
		})
	}
	if !ask(func(ctx context.Context) (bool, string) {
		why, err := g.settled(ctx, live)
		if err != nil {
			return false, err.Error()
		}
		return why == "", "group not settled: " + why
	}) {
		return c
	}
	c.settled = time.Since(from)
	var base map[int32]int64
	if !ask(func(ctx context.Context) (bool, string) {
		var err error
		base, err = g.progress(ctx)
		return err == nil, fmt.Sprint("reading the progress: ", err)
	}) {
		return c
	}
	if !ask(func(ctx context.Context) (bool, string) {
		now, err := g.progress(ctx)
		if err != nil {
			return false, err.Error()
		}
		var behind []string
		for p := int32(0); p < g.partitions; p++ {
			cur, ok := now[p]
			if was, had := base[p]; !ok || (had && cur <= was) {
				behind = append(behind, strconv.Itoa(int(p)))
			}
		}
		return len(behind) == 0, "partitions not progressing since the group settled: " + strings.Join(behind, ",")
	}) {
		return c
	}
	c.progressing = time.Since(from)
	c.stuck = ""
	return c
}
