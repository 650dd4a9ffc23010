package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/starrocks-txn/benthos-starrocks/emulator"
)

// A pipeline whose starrocks_txn output stops at start on an error no retry
// fixes (a refused password) makes the binary exit with status 1 soon after
// the error, also when a message is held in the pipeline's processors:
// Benthos's graceful stop would wait three quarters of shutdown_timeout (15 s
// by default) for that message, which the closed output never takes, before
// it stops the rest (internal/exitstatus).
func TestFatalStartErrorExitsQuickly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	e, err := emulator.Start(emulator.Config{HTTPAddr: "127.0.0.1:0", MySQLAddr: "", User: "loader", Password: "pw"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })

	dir := t.TempDir()
	bin := filepath.Join(dir, "benthos-starrocks")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the binary: %s", out)

	conf := filepath.Join(dir, "pipeline.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(`
http:
  enabled: false
input:
  generate:
    interval: 10ms
    mapping: 'root = {"id": 1}'
pipeline:
  processors:
    - mapping: root = this
output:
  starrocks_txn:
    schema_evolution: ignore
    load_urls: [ %q ]
    username: loader
    password: wrong
logger:
  level: info
  format: logfmt
`, e.FEURL())), 0o644))

	cmd := exec.Command(bin, "-c", conf)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// The moment the output logs that it stops, then the exit.
	fatal := make(chan time.Time, 1)
	var logs strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "The starrocks_txn output stops, and the pipeline with it") {
				select {
				case fatal <- time.Now():
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	exited := make(chan error, 1)
	go func() {
		<-scanned
		exited <- cmd.Wait()
	}()

	var at time.Time
	select {
	case at = <-fatal:
	case err := <-exited:
		t.Fatalf("the binary exited (%v) without the output's error; output:\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("no fatal error within 60 s; output:\n%s", logs.String())
	}
	select {
	case err := <-exited:
		took := time.Since(at)
		t.Logf("exited %v after the fatal error", took.Round(time.Millisecond))
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "exit: %v; output:\n%s", err, logs.String())
		assert.Equal(t, 1, ee.ExitCode())
		// The exit comes about 1 s after the error; the bound leaves room
		// for a loaded machine and is far below the 15 s of the stop
		// that waited for the held message.
		assert.Less(t, took, 5*time.Second, "output:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the binary did not exit within 30 s of the fatal error; output:\n%s", logs.String())
	}
}
