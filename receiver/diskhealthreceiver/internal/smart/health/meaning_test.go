package health

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
)

// The rules read what the drive database says an attribute is. On a
// Phison-based SSD (PNY CS900, Patriot Burst) 197 is Not_In_Use and 231 is
// SSD_Life_Left: a non-zero 197 is no pending sector, and endurance comes
// from 231.
func TestPhisonPageRulesReadMeanings(t *testing.T) {
	const model = "PNY CS900 240GB SSD"
	page := func(lifeLeft uint8) Snapshot {
		return Snapshot{ATA: &ATA{Status: ata.SMARTStatusPassed, Attributes: attrs(model, nil,
			raw(197, ata.FlagOnline, 100, 100, 7),
			raw(231, ata.FlagOnline, lifeLeft, lifeLeft, uint64(lifeLeft)),
			raw(241, ata.FlagOnline, 100, 100, 1834))}}
	}
	s := page(97)
	a, ok := s.ATA.Attributes.Find(197)
	require.True(t, ok)
	require.Equal(t, "Not_In_Use", a.Name)

	v, _ := Evaluate(History{}, s)
	assert.Equal(t, OK, v.State, "a Not_In_Use 197 must not fire %s: %v", RuleBackblazeCounter, v.Reasons)
	assert.NotContains(t, ruleIDs(v.Reasons), RuleBackblazeCounter)
	left, la, ok := s.ATA.Attributes.LifeLeft()
	require.True(t, ok)
	assert.Equal(t, 97, left)
	assert.Equal(t, "SSD_Life_Left (231)", la.Label())

	v, _ = Evaluate(History{}, page(0))
	assert.Equal(t, []RuleID{RuleEnduranceExhausted}, ruleIDs(v.Reasons))
	assert.Equal(t, "SSD_Life_Left (231) is at 0%: the rated write endurance is used up", v.Reasons[0].Text)

	// The same bytes on a drive the database knows nothing about: 197 is the
	// default pending-sector count and fires.
	v, _ = Evaluate(History{}, Snapshot{ATA: &ATA{Attributes: attrs("", nil, raw(197, ata.FlagOnline, 100, 100, 7))}})
	assert.Equal(t, []RuleID{RuleBackblazeCounter}, ruleIDs(v.Reasons))
}
