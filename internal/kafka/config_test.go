package kafka

import (
	"testing"

	"github.com/redpanda-data/benthos/v4/public/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func spec() *service.ConfigSpec {
	return service.NewConfigSpec().Fields(SeedBrokersField(), ClientIDField(), TLSField(), SASLField())
}

func parse(t *testing.T, yaml string) (ClientConfig, error) {
	t.Helper()
	conf, err := spec().ParseYAML(yaml, nil)
	require.NoError(t, err)
	return ClientConfigFromParsed(conf)
}

func TestParseSeedBrokers(t *testing.T) {
	got, err := ParseSeedBrokers([]string{"a:9092, b:9092", " ", "c:9092,"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a:9092", "b:9092", "c:9092"}, got)

	_, err = ParseSeedBrokers([]string{" , "})
	require.EqualError(t, err, "seed_brokers must name at least one broker")
	_, err = ParseSeedBrokers(nil)
	require.EqualError(t, err, "seed_brokers must name at least one broker")

	_, err = ParseSeedBrokers([]string{"ok:9092", "alice:s3cret@broker:9092"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"broker:9092"`)
	assert.Contains(t, err.Error(), "set sasl")
	assert.NotContains(t, err.Error(), "s3cret")
	assert.NotContains(t, err.Error(), "alice")

	_, err = ParseSeedBrokers([]string{"kafka://bob:hunter2@broker:9092"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
	_, err = ParseSeedBrokers([]string{"kafka://broker:9092"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "without a scheme")
}

func TestClientConfigFromParsed(t *testing.T) {
	c, err := parse(t, `
seed_brokers: [ "a:9092,b:9092" ]
tls: { enabled: true, skip_cert_verify: true }
sasl:
  - mechanism: none
  - mechanism: SCRAM-SHA-512
    username: u
    password: p
`)
	require.NoError(t, err)
	assert.Equal(t, []string{"a:9092", "b:9092"}, c.SeedBrokers)
	assert.Equal(t, DefaultClientID, c.ClientID)
	assert.True(t, c.TLSEnabled)
	require.NotNil(t, c.TLS)
	assert.True(t, c.TLS.InsecureSkipVerify)
	require.Len(t, c.SASL, 1, "mechanism none is dropped")
	assert.Equal(t, SASL{Mechanism: SASLScramSHA512, Username: "u", Password: "p"}, c.SASL[0])
	assert.Equal(t, "SCRAM-SHA-512", c.SASL[0].KgoMechanism().Name())
	assert.Equal(t, "a:9092,b:9092", c.BrokersString())
	// seed brokers, client id, TLS dialer, SASL; no logger asked for.
	assert.Len(t, c.Opts(nil), 4)

	for yaml, want := range map[string]string{
		"seed_brokers: [ a ]\nsasl: [ { mechanism: GSSAPI, username: u } ]\n": `sasl[0].mechanism "GSSAPI" is not one of`,
		"seed_brokers: [ a ]\nsasl: [ { mechanism: PLAIN } ]\n":               "sasl[0].username must not be empty for mechanism PLAIN",
		"seed_brokers: [ \"\" ]\n":                                            "seed_brokers must name at least one broker",
	} {
		_, err := parse(t, yaml)
		require.Error(t, err, yaml)
		assert.Contains(t, err.Error(), want)
	}
}

// TestSeedBrokersLintAsTheyFail: the seed_brokers lint rule reports what
// ParseSeedBrokers refuses, with the same text.
func TestSeedBrokersLintAsTheyFail(t *testing.T) {
	env := service.NewEnvironment()
	require.NoError(t, env.RegisterInput("seed_rules", spec(), func(*service.ParsedConfig, *service.Resources) (service.Input, error) {
		return nil, nil
	}))
	linter := env.NewComponentConfigLinter()
	for _, tc := range []struct {
		yaml string
		ok   bool
	}{
		{`seed_brokers: [ "a:9092", "b:9092,c:9092" ]`, true},
		{`seed_brokers: []`, false},
		{`seed_brokers: [ " , ", "" ]`, false},
		{`seed_brokers: [ "a:9092", "alice:s3cret@b:9092" ]`, false},
		{`seed_brokers: [ "kafka://bob:pw@b:9092" ]`, false},
		{`seed_brokers: [ "a:9092,kafka://b:9092" ]`, false},
	} {
		lints, err := linter.LintInputYAML([]byte("seed_rules:\n  " + tc.yaml + "\n"))
		require.NoError(t, err)
		_, perr := parse(t, tc.yaml+"\n")
		if tc.ok {
			assert.Empty(t, lints, tc.yaml)
			assert.NoError(t, perr, tc.yaml)
			continue
		}
		require.Len(t, lints, 1, tc.yaml)
		require.Error(t, perr, tc.yaml)
		assert.Equal(t, perr.Error(), lints[0].What, tc.yaml)
		assert.NotContains(t, lints[0].What, "s3cret")
		assert.NotContains(t, lints[0].What, ":pw")
	}
}
