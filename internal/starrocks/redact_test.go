package starrocks

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// No URL the client names in an error carries userinfo: not a load URL
// refused for having credentials (URL.Redacted would keep the user name),
// not a Location a server sent with credentials in it, parsable or not.
func TestURLsInErrorsCarryNoUserinfo(t *testing.T) {
	_, err := New(Config{LoadURLs: []string{"http://admin:hunter2@fe:8030"}})
	require.ErrorContains(t, err, "credentials in the URL")
	assert.NotContains(t, err.Error(), "admin")
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "fe:8030")

	for name, loc := range map[string]string{
		"unparsable Location":           "http://evil:pw-in-location@fe%zz:8030/api",
		"Location to a refused address": strings.Replace(refusedURL(t), "http://", "http://evil:pw-in-location@", 1) + "/api",
	} {
		t.Run(name, func(t *testing.T) {
			fe := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				w.Header().Set("Location", loc)
				w.WriteHeader(http.StatusTemporaryRedirect)
			})
			c := newClient(t, Config{LoadURLs: []string{fe.srv.URL}})
			_, err := c.Begin(context.Background(), Txn{DB: "shop", Label: "l1", Multi: true})
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "pw-in-location")
			assert.NotContains(t, err.Error(), "evil")
		})
	}
}
