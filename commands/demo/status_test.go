package demo

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

func TestWriteStatus(t *testing.T) {
	var b bytes.Buffer
	writeStatus(&b, false, "1s a")
	writeStatus(&b, false, "2s b")
	assert.Equal(t, "1s a\n2s b\n", b.String(), "plain lines in a log")
	b.Reset()
	writeStatus(&b, true, "1s a")
	writeStatus(&b, true, "2s b")
	assert.Equal(t, "\r1s a   \r2s b   ", b.String(), "one line rewritten on a terminal")
}

func TestIsTerminal(t *testing.T) {
	var b bytes.Buffer
	assert.False(t, isTerminal(&b))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	assert.False(t, isTerminal(w), "a pipe")
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	require.NoError(t, err)
	defer null.Close()
	assert.False(t, isTerminal(null), "a character device that is not a terminal")
	if runtime.GOOS != "linux" {
		return
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	assert.True(t, isTerminal(ptmx), "a pseudo-terminal")
}

// The demo command writing into a buffer (a log, a pipe) prints its status
// as plain lines, without carriage returns.
func TestDemoCommandStatusLinesInALog(t *testing.T) {
	pipeline, err := os.ReadFile("../../examples/demo.yaml")
	require.NoError(t, err)
	schema, err := os.ReadFile("../../examples/schema.sql")
	require.NoError(t, err)
	var out bytes.Buffer
	app := &cli.App{Writer: &out, Commands: []*cli.Command{Command(string(pipeline), string(schema))}}
	require.NoError(t, app.RunContext(context.Background(), []string{"bin", "demo", "--duration", "3s", "--rate", "60", "--partitions", "1", "--mysql", "127.0.0.1:0"}))
	text := out.String()
	assert.NotContains(t, text, "\r")
	status := regexp.MustCompile(`(?m)^\s+\d+s  source txns/s +\d+  rows/s +\d+  commits +\d+  visibility p50 .* torn reads 0$`)
	assert.GreaterOrEqual(t, len(status.FindAllString(text, -1)), 2, "a status line a second:\n%s", text)
	assert.True(t, strings.Contains(text, "OK: tables equal"), text)
}
