package starrocks

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tlsFE is an https FE that redirects every request to to, as a real FE
// redirects a load to a BE (always with an http:// Location).
func tlsFE(t *testing.T, to func() string) (*httptest.Server, *tls.Config) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", to()+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, &tls.Config{RootCAs: pool}
}

// An https FE that redirects to plain http is refused by default: nothing
// reaches the BE (no credentials, no rows), the error is fatal and names
// both ends without credentials. Opting in re-sends everything.
func TestRedirectFromHTTPSToHTTP(t *testing.T) {
	be := newFake(t, nil)
	fe, trust := tlsFE(t, func() string { return be.srv.URL })
	load := LoadRequest{Txn: Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true}, Body: []byte(`[{"id":1}]`)}

	c := newClient(t, Config{LoadURLs: []string{fe.URL}, TLS: trust})
	_, err := c.Load(context.Background(), load)
	require.ErrorIs(t, err, ErrInsecureRedirect)
	assert.Equal(t, ClassFatal, ClassOf(err))
	assert.Contains(t, err.Error(), fe.URL)
	assert.Contains(t, err.Error(), be.srv.URL)
	assert.NotContains(t, err.Error(), "s3cret-pw")
	assert.Empty(t, be.requests(), "the BE got nothing: neither the credentials nor the rows")

	_, err = c.Commit(context.Background(), load.Txn)
	require.ErrorIs(t, err, ErrInsecureRedirect)
	assert.Equal(t, ClassFatal, ClassOf(err), "the FE that redirected did not act on the commit: not ambiguous")

	opted := newClient(t, Config{LoadURLs: []string{fe.URL}, TLS: trust, AllowInsecureRedirect: true})
	_, err = opted.Load(context.Background(), load)
	require.NoError(t, err)
	got := be.last(t)
	assert.Equal(t, basicAuth("loader", "s3cret-pw"), got.Header.Get("Authorization"), "StarRocks needs the credentials on the BE leg")
	assert.Equal(t, http.MethodPut, got.Method)
	assert.Equal(t, "orders", got.Header.Get("table"))
	assert.Equal(t, load.Body, got.Body)
}

// A redirect that keeps TLS (an https BE, another host) re-sends the
// credentials without any opt-in, and so does http → http (the FE → BE
// redirect of a plain cluster).
func TestRedirectKeepingTheSchemeResendsCredentials(t *testing.T) {
	beTLS := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, basicAuth("loader", "s3cret-pw"), r.Header.Get("Authorization"))
		writeJSON(w, 200, `{"Status":"OK","Message":""}`)
	}))
	defer beTLS.Close()
	fe, trust := tlsFE(t, func() string { return beTLS.URL })
	trust.RootCAs.AddCert(beTLS.Certificate())
	c := newClient(t, Config{LoadURLs: []string{fe.URL}, TLS: trust})
	_, err := c.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true}, Body: []byte(`[]`)})
	require.NoError(t, err)

	be := newFake(t, nil)
	plainFE := newFake(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Location", be.srv.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	})
	plain := newClient(t, Config{LoadURLs: []string{plainFE.srv.URL}})
	_, err = plain.Load(context.Background(), LoadRequest{Txn: Txn{DB: "shop", Table: "orders", Label: "l1", Multi: true}, Body: []byte(`[]`)})
	require.NoError(t, err)
	assert.Equal(t, basicAuth("loader", "s3cret-pw"), be.last(t).Header.Get("Authorization"))
}
