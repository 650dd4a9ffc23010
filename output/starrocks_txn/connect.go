package starrocks_txn

import (
	"errors"
	"fmt"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/starrocks-txn/benthos-starrocks/internal/starrocks"
)

// The connection to StarRocks: the fields that say how the output reaches
// the FE (and its MySQL port) beyond the addresses and credentials, and
// what it does when it cannot.

const fieldAllowInsecureRedirect = "allow_insecure_redirect"

// connConfig is the part of the config this file parses.
type connConfig struct {
	// allowInsecureRedirect follows a redirect from an https load URL to
	// an http one (starrocks.Config.AllowInsecureRedirect).
	allowInsecureRedirect bool
}

func allowInsecureRedirectField() *service.ConfigField {
	return service.NewBoolField(fieldAllowInsecureRedirect).
		Description("Follow a redirect from an `https://` load URL to an `http://` one, re-sending the credentials. " +
			"Real FEs redirect every load to `http://<be_host>:<be_http_port>` (and a non-leader FE to `http://<leader>`), " +
			"whatever the scheme they were reached on, so with `https://` load URLs TLS protects only the request to the FE: " +
			"the credentials and the rows then cross the network to the BE in clear. Off, such a redirect fails with an error " +
			"that names this field; turn it on only when that network is trusted.").
		Example(true).
		Default(false).
		Advanced()
}

// newStarRocksClient builds the HTTP client of the configuration.
func newStarRocksClient(c config) (*starrocks.Client, error) {
	cl, err := starrocks.New(starrocks.Config{
		LoadURLs:              c.loadURLs,
		Username:              c.username,
		Password:              c.password,
		TLS:                   c.tls,
		RequestTimeout:        c.requestTimeout,
		Compression:           c.compression,
		AllowInsecureRedirect: c.conn.allowInsecureRedirect,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the StarRocks client: %w", err)
	}
	return cl, nil
}

func connConfigFromParsed(conf *service.ParsedConfig) (c connConfig, err error) {
	if c.allowInsecureRedirect, err = conf.FieldBool(fieldAllowInsecureRedirect); err != nil {
		return
	}
	return
}

// connHint adds to a client error the field that fixes it, for the errors
// whose cause is the configuration of the connection. The class of err is
// kept (starrocks.ClassOf sees through the wrapping).
func connHint(err error) error {
	if errors.Is(err, starrocks.ErrInsecureRedirect) {
		return fmt.Errorf("%w; set %s: true to follow it (the rest of the way is not encrypted), or use http:// load URLs", err, fieldAllowInsecureRedirect)
	}
	return err
}
