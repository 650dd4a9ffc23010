package integration

import (
	"os"
	"testing"

	"github.com/sirupsen/logrus"
)

// TestMain silences go-mysql-server's per-connection info lines (it logs
// through logrus' standard logger, as the emulator command does without
// --verbose), so a failing test's output shows the pipelines' own logs.
func TestMain(m *testing.M) {
	logrus.SetLevel(logrus.WarnLevel)
	os.Exit(m.Run())
}
