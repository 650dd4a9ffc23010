package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ConnectTimeout bounds the reachability and topic checks when the caller's
// context has no deadline.
const ConnectTimeout = 30 * time.Second

// KgoMechanism returns the franz-go SASL mechanism.
func (s SASL) KgoMechanism() sasl.Mechanism {
	switch s.Mechanism {
	case SASLPlain:
		return plain.Auth{User: s.Username, Pass: s.Password}.AsMechanism()
	case SASLScramSHA256:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha256Mechanism()
	default:
		return scram.Auth{User: s.Username, Pass: s.Password}.AsSha512Mechanism()
	}
}

// Opts returns the kgo options that reach the cluster: seed brokers, client
// ID, TLS, SASL and, when logger is not nil, the logger. Components append
// their consumer or producer options.
func (c ClientConfig) Opts(logger kgo.Logger) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.SeedBrokers...),
		kgo.ClientID(c.ClientID),
	}
	if logger != nil {
		opts = append(opts, kgo.WithLogger(logger))
	}
	if c.TLSEnabled {
		opts = append(opts, kgo.DialTLSConfig(c.TLS))
	}
	if len(c.SASL) > 0 {
		mechs := make([]sasl.Mechanism, 0, len(c.SASL))
		for _, s := range c.SASL {
			mechs = append(mechs, s.KgoMechanism())
		}
		opts = append(opts, kgo.SASL(mechs...))
	}
	return opts
}

// ClusterError turns a connection or authorization failure into an error
// that names the setting to check. acls says what the user must be allowed
// to do, for the authorization case (e.g. `topics [cdc] and consumer_group
// "g"`).
//
// A failure no retry fixes (definite.go) is a *DefiniteError.
func (c ClientConfig) ClusterError(doing, acls string, err error) error {
	if d := c.definite(doing, err); d != nil {
		return &DefiniteError{d}
	}
	switch {
	case errors.Is(err, kerr.TopicAuthorizationFailed),
		errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return fmt.Errorf("%s: the sasl user is not authorized (check the ACLs for %s): %w", doing, acls, err)
	case c.closedInSASL(err):
		// Some brokers close the connection instead of answering a failed
		// SASL authentication with an error code.
		return fmt.Errorf("%s: seed_brokers [%s] closed the connection during the sasl handshake: authentication with sasl mechanism %s as user %q was probably refused, check the sasl username and password: %w", doing, c.BrokersString(), c.SASL[0].Mechanism, c.SASL[0].Username, err)
	default:
		return fmt.Errorf("%s: seed_brokers [%s] are unreachable or refused the connection (check the addresses, tls and sasl): %w", doing, c.BrokersString(), err)
	}
}

// CheckCluster verifies, with a short-lived client, that a broker answers
// (which proves the addresses, TLS and SASL) and that every topic of topics
// exists. acls is passed to ClusterError. A missing topic is named with the
// field that lists it (topicsField).
func (c ClientConfig) CheckCluster(ctx context.Context, logger kgo.Logger, topicsField, acls string, topics ...string) error {
	cl, err := kgo.NewClient(c.Opts(logger)...)
	if err != nil {
		return fmt.Errorf("creating kafka client: %w", err)
	}
	defer cl.Close()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ConnectTimeout)
		defer cancel()
	}
	if err := c.ping(ctx, cl, acls); err != nil {
		return err
	}
	if len(topics) == 0 {
		return nil
	}
	details, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		return c.ClusterError("listing topics", acls, err)
	}
	var missing []string
	for _, t := range topics {
		d, ok := details[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			missing = append(missing, t)
			continue
		}
		if d.Err != nil {
			return c.ClusterError(fmt.Sprintf("reading metadata of topic %q", t), acls, d.Err)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("topics %q do not exist on the cluster at seed_brokers [%s]: create them or fix %s", missing, c.BrokersString(), topicsField)
	}
	return nil
}

// saslAttempts is how many times a connection closed during the SASL
// handshake is tried before the close counts as a refusal.
const saslAttempts = 3

// ping reaches a broker. A broker that closes the connection during the SASL
// handshake (as some do instead of answering a refused login with an error
// code) is tried saslAttempts times, a second apart: closed every time, the
// login is refused, which no retry fixes (a *DefiniteError); a broker that
// was restarting answers the next time.
func (c ClientConfig) ping(ctx context.Context, cl *kgo.Client, acls string) error {
	var err error
	for i := 0; i < saslAttempts; i++ {
		if err = cl.Ping(ctx); err == nil {
			return nil
		}
		if !c.closedInSASL(err) {
			return c.ClusterError("connecting to kafka", acls, err)
		}
		if i < saslAttempts-1 {
			select {
			case <-ctx.Done():
				return c.ClusterError("connecting to kafka", acls, err)
			case <-time.After(time.Second):
			}
		}
	}
	return &DefiniteError{c.ClusterError("connecting to kafka", acls, err)}
}

// closedInSASL reports whether err is a broker closing the connection while
// SASL is configured.
func (c ClientConfig) closedInSASL(err error) bool {
	return len(c.SASL) > 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}
