package emulator

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestControlAPINeedsAuthErrorLogDoesNot: the /_emulator/* control API
// answers 401 without the API's credentials or with wrong ones, and nothing
// happens; with them it works. The error log (on the FE and the BE) is
// served to anyone, as StarRocks's BE serves /api/_load_error_log.
func TestControlAPINeedsAuthErrorLogDoesNot(t *testing.T) {
	t.Parallel()
	e := startEmu(t, func(c *Config) { c.BEAddr = "127.0.0.1:0"; c.Password = "s3cret" })
	c := newClient(t, e)
	c.pass = "s3cret"
	// one good row and one without its NOT NULL customer_id: the filter
	// ratio fails the commit with a tracking_url
	mixed := strings.TrimSuffix(orderRows(1, 1), "]") + "," + strings.TrimPrefix(badOrderRows(2, 1), "[")
	requireStatus(t, c.begin(multiH("test", "au")), "OK", "")
	r := c.load(jsonLoadH("test", "au", "orders"), mixed)
	require.Equal(t, http.StatusTemporaryRedirect, r.code, r.raw)
	requireStatus(t, c.do(http.MethodPut, r.hdr.Get("Location"), jsonLoadH("test", "au", "orders"), mixed), "OK", "")
	r = c.commit(multiH("test", "au"))
	require.Equal(t, "FAILED", r.str("Status"), r.raw)
	msg := r.str("Message")
	i := strings.Index(msg, "tracking_url: ")
	require.Positive(t, i, msg)
	logURL := strings.TrimSuffix(msg[i+len("tracking_url: "):], "}")

	endpoints := []struct{ method, url, body string }{
		{http.MethodPost, e.FEURL() + "/_emulator/faults", `{"op":"begin","action":"internal_error"}`},
		{http.MethodGet, e.FEURL() + "/_emulator/faults", ""},
		{http.MethodDelete, e.FEURL() + "/_emulator/faults", ""},
		{http.MethodGet, e.FEURL() + "/_emulator/counters", ""},
		{http.MethodPost, e.FEURL() + "/_emulator/evict_labels", `{}`},
		{http.MethodPost, e.FEURL() + "/_emulator/restart", ""},
	}
	for _, ep := range endpoints {
		for _, cred := range []struct{ user, pass string }{{"", ""}, {"root", "wrong"}} {
			anon := &client{t: t, base: e.FEURL(), user: cred.user, pass: cred.pass, hc: http.DefaultClient}
			r := anon.do(ep.method, ep.url, nil, ep.body)
			assert.Equal(t, http.StatusUnauthorized, r.code, "%s %s as %q", ep.method, ep.url, cred.user)
			assert.Equal(t, `Basic realm=""`, r.hdr.Get("WWW-Authenticate"))
			assert.Equal(t, "FAILED", r.str("status"), r.raw)
		}
	}
	assert.Empty(t, e.Faults().Pending(), "the refused POST queued nothing")
	assert.Equal(t, "ABORTED", c.state("test", "au"), "the refused evict and restart did nothing")

	r = c.do(http.MethodGet, logURL, nil, "")
	require.Equal(t, http.StatusOK, r.code)
	assert.Contains(t, r.raw, "customer_id", "with credentials the rejected rows are served")
	for _, u := range []string{logURL, strings.Replace(logURL, e.BEURL(), e.FEURL(), 1)} {
		for _, cred := range []struct{ user, pass string }{{"", ""}, {"root", "wrong"}} {
			anon := &client{t: t, base: e.FEURL(), user: cred.user, pass: cred.pass, hc: http.DefaultClient}
			r := anon.do(http.MethodGet, u, nil, "")
			assert.Equal(t, http.StatusOK, r.code, "%s as %q: the error log needs no credentials", u, cred.user)
			assert.Contains(t, r.raw, "customer_id", u)
		}
	}
	r = c.do(http.MethodPost, "/_emulator/faults", nil, `{"op":"begin","action":"internal_error"}`)
	require.Equal(t, http.StatusOK, r.code, r.raw)
	assert.Len(t, e.Faults().Pending(), 1)
}
