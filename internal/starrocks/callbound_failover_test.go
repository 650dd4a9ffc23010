package starrocks

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The servers of these tests take their time on the client's bounds' clock
// (stepClock): how long a call took, and whether its bound ran out first,
// do not depend on how loaded the machine running them is.

// tookOn is a server taking took, on clk, to answer r: it reports whether
// the client still waits for the answer. A client whose bound was shorter
// ran out meanwhile (its context ended when clk passed the deadline): then
// the server answers nothing and returns once the client gave up.
func tookOn(clk *stepClock, r *http.Request, took time.Duration) bool {
	if clk.Add(took) == 0 {
		return true
	}
	<-r.Context().Done()
	return false
}

// A StarRocks slower than request_timeout on every load is still loaded when
// one of two load URLs refuses connections. The refused URL answers in a
// millisecond, which must not count as "a call that needed under half of
// its bound": each load that timed out moves the preference to the next URL
// (do), which with two URLs is the refused one, so every replay first halves
// the bound on the refused FE and then times out at RequestTimeout on the
// live one, forever.
func TestCallBoundGrowsPastARefusedLoadURL(t *testing.T) {
	const base = 100 * time.Millisecond
	clk := newStepClock()
	slow := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if tookOn(clk, r, base*3/2) {
			writeJSON(w, 200, `{"Status":"OK","Message":""}`)
		}
	})
	c := newClient(t, Config{LoadURLs: []string{refusedURL(t), slow.srv.URL}, RequestTimeout: base})
	c.bounds.clock = clk
	tx := Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
	var errs []error
	for range 6 {
		_, err := c.Load(context.Background(), LoadRequest{Txn: tx, Body: []byte("{}")})
		if err == nil {
			return
		}
		errs = append(errs, err)
	}
	require.Fail(t, "six replays of a load 1.5 × request_timeout slow all timed out: the bound never grew", "bound now %v; errors: %v", c.bound(OpLoad, "shop", "t").current(), errs)
}

// The same with a proxy in front of a dead FE that answers 503 at once: the
// quick 5xx is ambiguous (not failed over), moves the preference to the live
// URL, and the next replay goes back to the proxy, halving the bound again.
func TestCallBoundGrowsPastAQuick5xxLoadURL(t *testing.T) {
	const base = 100 * time.Millisecond
	clk := newStepClock()
	proxy := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 503, `no healthy upstream`)
	})
	slow := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if tookOn(clk, r, base*3/2) {
			writeJSON(w, 200, `{"Status":"OK","Message":""}`)
		}
	})
	c := newClient(t, Config{LoadURLs: []string{proxy.srv.URL, slow.srv.URL}, RequestTimeout: base})
	c.bounds.clock = clk
	tx := Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
	for range 12 {
		_, err := c.Load(context.Background(), LoadRequest{Txn: tx, Body: []byte("{}")})
		if err == nil {
			return
		}
	}
	require.Fail(t, "twelve replays of a load 1.5 × request_timeout slow never succeeded", "bound now %v; slow URL got %d loads, proxy %d", c.bound(OpLoad, "shop", "t").current(), len(slow.requests()), len(proxy.requests()))
}

// Two databases share the output's Client, so their loads share one bound
// (per operation, not per database or table). A database whose loads are
// slower than request_timeout (large bodies) next to one whose loads are
// quick never commits: between two replays of the slow load (the output's
// retry_backoff, at least 1 s by default) the quick database commits at
// least once (commit_interval, 1 s by default), and its quick load halves
// the bound the slow load's timeout had just doubled, so every replay runs
// at request_timeout again.
func TestCallBoundGrowsForASlowDatabaseBesideAQuickOne(t *testing.T) {
	const base = 100 * time.Millisecond
	clk := newStepClock()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.Header.Get("db") != "big" || tookOn(clk, r, base*3/2) {
			writeJSON(w, 200, `{"Status":"OK","Message":""}`)
		}
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}, RequestTimeout: base})
	c.bounds.clock = clk
	big := Txn{DB: "big", Table: "t", Label: "l1", Multi: true}
	small := Txn{DB: "small", Table: "t", Label: "l2", Multi: true}
	for range 6 {
		_, err := c.Load(context.Background(), LoadRequest{Txn: big, Body: []byte("{}")})
		if err == nil {
			return
		}
		// The other database's cycle between two replays of this one.
		_, err = c.Load(context.Background(), LoadRequest{Txn: small, Body: []byte("{}")})
		require.NoError(t, err)
	}
	require.Fail(t, "six replays of a load 1.5 × request_timeout slow all timed out while another database loaded quickly in between", "bound now %v", c.bound(OpLoad, "big", "t").current())
}

// A table whose big loads are slower than request_timeout (the BE's time
// grows with the body) and whose small loads are quick: the small loads of
// the same table between two replays of the big one (the chunks streamed in
// the meantime, another cycle's loads) must not shrink the bound the big
// load's timeout grew, or every replay runs at request_timeout again and
// times out: a cycle replayed forever while its backlog grows.
func TestCallBoundOfABigLoadIsNotShrunkBySmallLoads(t *testing.T) {
	const base = 200 * time.Millisecond
	const big = 1 << 20
	clk := newStepClock()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		// 300 ms for the big body (1.5 × request_timeout), next to
		// nothing for a small one.
		if tookOn(clk, r, time.Duration(len(body))*(base*3/2)/big) {
			writeJSON(w, 200, `{"Status":"OK","Message":""}`)
		}
	})
	c := newClient(t, Config{LoadURLs: []string{f.srv.URL}, RequestTimeout: base})
	c.bounds.clock = clk
	tx := Txn{DB: "shop", Table: "t", Label: "l1", Multi: true}
	bigBody := bytes.Repeat([]byte{' '}, big)
	attempts, answered := 0, false
	for attempts < 6 && !answered {
		attempts++
		_, err := c.Load(context.Background(), LoadRequest{Txn: tx, Body: bigBody})
		if answered = err == nil; answered {
			break
		}
		// Small loads of the same table, answered at once, before the
		// replay.
		for range 3 {
			_, err := c.Load(context.Background(), LoadRequest{Txn: tx, Body: []byte(`[{"id":1}]`)})
			require.NoError(t, err)
		}
	}
	t.Logf("attempts of the big load: %d, answered: %v", attempts, answered)
	require.True(t, answered, "six replays of the big load timed out: quick small loads shrank its bound each time")
	assert.Equal(t, 2, attempts, "the big load's replay timed out again: quick small loads shrank the bound its first attempt's timeout grew")
}
