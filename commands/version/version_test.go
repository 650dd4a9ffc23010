package version

import (
	"bytes"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProjectVersion(t *testing.T) {
	assert.Equal(t, Fallback, project(nil))
	assert.Equal(t, "v0.3.1", project(&debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}))
	assert.Equal(t, Fallback, project(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}))
	assert.Equal(t, Fallback+"+0123456789ab", project(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}}))
	assert.Equal(t, Fallback+"+0123456789ab.dirty", project(&debug.BuildInfo{
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}))
}

func TestBenthosVersion(t *testing.T) {
	assert.Equal(t, benthosFallback, benthos(nil))
	assert.Equal(t, "unknown", benthos(&debug.BuildInfo{Deps: []*debug.Module{{Path: "x/y", Version: "v1"}}}))
	assert.Equal(t, "v4.60.0", benthos(&debug.BuildInfo{Deps: []*debug.Module{{Path: "x/y", Version: "v1"}, {Path: benthosModule, Version: "v4.60.0"}}}))
	assert.Equal(t, "v4.61.0 (replacing v4.60.0)", benthos(&debug.BuildInfo{Deps: []*debug.Module{{Path: benthosModule, Version: "v4.60.0",
		Replace: &debug.Module{Path: "../benthos", Version: "v4.61.0"}}}}))
	// A test binary has no dependency info: the fallback, which is go.mod's.
	mod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*`+regexp.QuoteMeta(benthosModule+" "+benthosFallback)+`$`, string(mod))
	assert.Equal(t, benthosFallback, Benthos())
}

func TestPrint(t *testing.T) {
	var b bytes.Buffer
	Print(&b)
	assert.Regexp(t, `^benthos-starrocks 0\.1\.0-dev\S* \(Benthos v4\.60\.0, go1\.\S+ \S+/\S+\)\n$`, b.String())
}

func TestRequested(t *testing.T) {
	for args, want := range map[string]bool{
		"--version":                  true,
		"-v":                         true,
		"-c x.yaml --version":        true,
		"--log.level debug -v":       true,
		"--version=false":            false,
		"-c -v":                      false, // -v is the config path
		"lint -v x.yaml":             false, // a subcommand's own flag
		"demo --version":             false,
		"":                           false,
		"--chilled --set a=b -v":     true,
		"-- --version":               false,
		"-r res.yaml --version=true": true,
	} {
		assert.Equal(t, want, Requested(strings.Fields(args)), args)
	}
}
