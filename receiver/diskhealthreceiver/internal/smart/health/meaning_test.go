package health

import (
	"slices"
	"strings"
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
		return Snapshot{ATA: &ATA{Status: ata.SMARTStatusPassed, Attributes: attrs(t, model, nil,
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
	v, _ = Evaluate(History{}, Snapshot{ATA: &ATA{Attributes: attrs(t, "", nil, raw(197, ata.FlagOnline, 100, 100, 7))}})
	assert.Equal(t, []RuleID{RuleBackblazeCounter}, ruleIDs(v.Reasons))
}

// The ID-selected rules read meanings too. On an OCZ Vector 150 (Indilinx
// Barefoot 3) 5 is Runtime_Bad_Block, 187 Total_Unc_NAND_Reads and 199
// Host_Writes_GiB, and the interface CRC count is 210 SATA_CRC_Error_Count:
// rising 5 and 199 fire neither the reallocated-rising nor the CRC rule (nor
// does 187 fire Backblaze's), a rising 210 fires the CRC rule. The same bytes
// on a drive the database does not know fire all three, by the default names.
func TestIDRulesReadMeanings(t *testing.T) {
	const flags = ata.FlagPreFail | ata.FlagOnline
	page := func(model string, n uint64) Snapshot {
		return Snapshot{ATA: &ATA{Status: ata.SMARTStatusPassed, Attributes: attrs(t, model, nil,
			raw(5, flags, 100, 100, n), raw(187, ata.FlagOnline, 100, 100, n), raw(199, ata.FlagOnline, 100, 100, 5000+n),
			raw(210, ata.FlagOnline, 100, 100, 4+n))}}
	}
	rise := func(model string) Verdict {
		_, h := Evaluate(History{}, page(model, 0))
		v, _ := Evaluate(h, page(model, 2))
		return v
	}

	const model = "OCZ-VECTOR150"
	a, ok := page(model, 0).ATA.Attributes.Find(199)
	require.True(t, ok)
	require.Equal(t, "Host_Writes_GiB", a.Name)
	v := rise(model)
	assert.Equal(t, []RuleID{RuleCRCErrorsRising}, ruleIDs(v.Reasons), "%v", v.Reasons)
	assert.Contains(t, v.Reasons[0].Text, "SATA_CRC_Error_Count (210) rose from 4 to 6")
	assert.Equal(t, Degraded, v.State)

	v = rise("")
	assert.ElementsMatch(t, []RuleID{RuleBackblazeCounter, RuleReallocatedRising, RuleCRCErrorsRising}, uniqueRules(v.Reasons), "%v", v.Reasons)
	var texts []string
	for _, r := range v.Reasons {
		texts = append(texts, r.Text)
	}
	assert.Contains(t, texts, "Reallocated_Sector_Ct (5) rose from 0 to 2 since monitoring began")
	assert.Contains(t, strings.Join(texts, "\n"), "UDMA_CRC_Error_Count (199) rose from 5000 to 5002")
}

func uniqueRules(rs []Reason) []RuleID {
	var out []RuleID
	for _, id := range ruleIDs(rs) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
