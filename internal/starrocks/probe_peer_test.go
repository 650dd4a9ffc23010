package starrocks

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failure that concerns one load URL (not an FE, a name that does not
// resolve, TLS) does not make the report definite while another URL answers:
// the pipeline starts on the FEs that answer. Failures every FE shares (the
// credentials, the database) are definite whatever the others say, and a
// per-URL failure is definite once no URL answers.
func TestProbeReportPerURLFailuresWaitForTheOthers(t *testing.T) {
	resolverSaysNoSuchHost(t, "no-such-fe.invalid")
	okState := `{"state":"UNKNOWN","status":"OK","msg":"Success"}`
	good := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, 200, okState) })
	proxy404 := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, 404, `<html>not found</html>`) })
	refusing := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 401, `{"status":"FAILED","msg":"Access denied for user 'loader'"}`)
	})
	noDB := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		writeJSON(w, 200, `{"status":"FAILED","msg":"unknown database, database=shop"}`)
	})
	const nxdomain = "http://no-such-fe.invalid:8030"

	cases := []struct {
		name     string
		urls     []string
		definite Cause // -1: none
	}{
		{"a good FE and a proxy answering 404", []string{good.srv.URL, proxy404.srv.URL}, -1},
		{"a proxy answering 404 first", []string{proxy404.srv.URL, good.srv.URL}, -1},
		{"a good FE and a name that does not resolve", []string{nxdomain, good.srv.URL}, -1},
		{"only a proxy", []string{proxy404.srv.URL}, CauseNotFE},
		{"a proxy and a name that does not resolve", []string{proxy404.srv.URL, nxdomain}, CauseNotFE},
		{"a proxy and an FE that is down", []string{proxy404.srv.URL, refusedURL(t)}, CauseNotFE},
		{"credentials refused by one FE", []string{good.srv.URL, refusing.srv.URL}, CauseAuth},
		{"the database missing on one FE", []string{noDB.srv.URL, good.srv.URL}, CauseNoDatabase},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, Config{LoadURLs: tc.urls})
			r := c.Probe(context.Background(), "shop")
			d := r.Definite()
			if tc.definite < 0 {
				assert.Nil(t, d, "%+v", r.Failed)
				assert.NotEmpty(t, r.OK)
				return
			}
			require.NotNil(t, d, "ok %v", r.OK)
			assert.Equal(t, tc.definite, d.Cause, "%v", d)
		})
	}
}

// Once a probe found a load URL that is not an FE while another answers, the
// client's requests go to the FEs that answer, also after a failover or an
// ambiguous outcome would have moved them to the next URL: a proxy that
// answers 404 would otherwise refuse every begin for good.
func TestClientAvoidsALoadURLTheProbeFoundUnusable(t *testing.T) {
	proxy404 := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) { writeJSON(w, 404, `<html>not found</html>`) })
	answer := http.StatusOK
	good := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path == "/api/shop/get_load_state" {
			writeJSON(w, 200, `{"state":"UNKNOWN","status":"OK"}`)
			return
		}
		writeJSON(w, answer, `{"Status":"OK","Message":""}`)
	})
	c := newClient(t, Config{LoadURLs: []string{proxy404.srv.URL, good.srv.URL}})
	r := c.Probe(context.Background(), "shop")
	require.Nil(t, r.Definite())
	probes := len(proxy404.requests())

	tx := Txn{DB: "shop", Label: "l1", Multi: true}
	for range 3 {
		_, err := c.Begin(context.Background(), tx)
		require.NoError(t, err)
	}
	// An ambiguous outcome (a 5xx) moves the next request to the next URL,
	// which must not be the proxy.
	answer = http.StatusServiceUnavailable
	_, err := c.Begin(context.Background(), tx)
	require.Error(t, err)
	answer = http.StatusOK
	_, err = c.Begin(context.Background(), tx)
	require.NoError(t, err, "the request after an ambiguous one goes to an FE that answers")
	assert.Len(t, proxy404.requests(), probes, "no request but the probe reached the proxy")

	// A later probe that finds the URL healthy takes it back.
	proxy404.reply = nil
	require.Empty(t, c.Probe(context.Background(), "").Failed)
	answer = http.StatusServiceUnavailable
	_, _ = c.Begin(context.Background(), tx)
	answer = http.StatusOK
	_, err = c.Begin(context.Background(), tx)
	require.NoError(t, err)
	assert.Greater(t, len(proxy404.requests()), probes+1, "the URL is used again once a probe found it healthy")
}
