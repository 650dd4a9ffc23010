package testkit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A partial read that heals within the bound passes and is measured; one
// that outlasts the bound, or never heals before the end, fails: a source
// transaction left partial for good cannot pass the check.
func TestHealFailsOnlyWhatNeverHeals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	h := NewHeal(time.Second)
	h.Round(at(0), at(5), nil)
	h.Round(at(10), at(15), []string{"7"})
	h.Round(at(20), at(25), []string{"7", "8"})
	h.Round(at(30), at(35), []string{"8"})
	h.Round(at(40), at(45), nil)
	require.NoError(t, h.Check(true))
	assert.Equal(t, 5, h.Rounds)
	assert.Equal(t, 3, h.Partial)
	assert.Equal(t, 2, h.Healed)
	assert.Equal(t, 25*time.Millisecond, h.Longest, "7: from the start of round 2 (10 ms) to the end of round 4 (35 ms); 8 the same")

	stuck := NewHeal(time.Second)
	stuck.Round(at(0), at(5), []string{"9"})
	stuck.Round(at(900), at(905), []string{"9"})
	require.NoError(t, stuck.Check(false), "within the bound so far")
	require.Error(t, stuck.Check(true), "still partial once the run converged")
	stuck.Round(at(1500), at(1505), []string{"9"})
	err := stuck.Check(false)
	require.Error(t, err, "partial for longer than the bound")
	assert.Contains(t, err.Error(), "9 (partial since")
	stuck.Round(at(1600), at(1605), nil)
	assert.Error(t, stuck.Check(true), "healing late does not undo the breach")
}
