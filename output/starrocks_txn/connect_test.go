package starrocks_txn

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// parseTestConfig parses a YAML config of the output.
func parseTestConfig(t *testing.T, yaml string) config {
	t.Helper()
	pc, err := outputSpec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	c, err := configFromParsed(pc)
	require.NoError(t, err)
	return c
}

// certPEM is the PEM of an httptest TLS server's certificate.
func certPEM(srv *httptest.Server) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
}

// An https FE that redirects a load to an http BE, as real FEs do: the
// load fails with an error that needs an operator and names
// allow_insecure_redirect, and the BE sees nothing; with the field set the
// load reaches the BE.
func TestAllowInsecureRedirect(t *testing.T) {
	var beHits atomic.Int32
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		beHits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"Status":"OK","Message":""}`))
	}))
	defer be.Close()
	fe := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", be.URL+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer fe.Close()
	base := fmt.Sprintf("load_urls: [ %q ]\ntls: { enabled: true, root_cas: %q }\n", fe.URL, certPEM(fe))
	load := starrocks.LoadRequest{Txn: starrocks.Txn{DB: "test", Table: "orders", Label: "l1", Multi: true}, Body: []byte(`[]`)}

	cl, err := newStarRocksClient(parseTestConfig(t, base))
	require.NoError(t, err)
	defer cl.Close()
	err = srClient{cl}.Load(context.Background(), load)
	require.Error(t, err)
	assert.Contains(t, err.Error(), fieldAllowInsecureRedirect)
	assert.Equal(t, starrocks.ClassFatal, starrocks.ClassOf(err))
	assert.Zero(t, beHits.Load())

	opted, err := newStarRocksClient(parseTestConfig(t, base+"allow_insecure_redirect: true\n"))
	require.NoError(t, err)
	defer opted.Close()
	require.NoError(t, srClient{opted}.Load(context.Background(), load))
	assert.Equal(t, int32(1), beHits.Load())
}
