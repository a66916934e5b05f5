package ata

// What an attribute means is what the drive database names it, not its ID:
// on a Phison-based SSD 197 is "Not_In_Use" and 231 "SSD_Life_Left", while the
// defaults say pending sectors and temperature. Code that acts on a meaning
// (health rules, endurance) asks for it here, so a family whose entry gives
// an ID another meaning never feeds the wrong rule.

// Meaning is a fact some attributes carry, whatever their ID.
type Meaning uint8

// Meanings the health rules and the scraper read.
const (
	MeaningReallocatedSectors Meaning = iota + 1
	MeaningReportedUncorrectable
	MeaningCommandTimeouts
	MeaningPendingSectors
	MeaningOfflineUncorrectable
	// MeaningLifeLeft is an SSD's remaining rated endurance, read from the
	// normalized value (100 new, 0 worn out).
	MeaningLifeLeft
	// MeaningCRCErrors counts interface (UDMA / SATA FIS) CRC errors: a
	// cable, backplane or connector fault rather than the medium.
	MeaningCRCErrors
)

// meanings maps the drive database names that carry a meaning to it. Only
// these names do: an attribute named anything else (Not_In_Use,
// Unknown_Attribute, a vendor counter) carries none.
var meanings = map[string]Meaning{
	"Reallocated_Sector_Ct":   MeaningReallocatedSectors,
	"Reallocate_NAND_Blk_Cnt": MeaningReallocatedSectors,
	"Reported_Uncorrect":      MeaningReportedUncorrectable,
	"Command_Timeout":         MeaningCommandTimeouts,
	"Current_Pending_Sector":  MeaningPendingSectors,
	"Current_Pending_ECC_Cnt": MeaningPendingSectors,
	"Pending_Sector_Count":    MeaningPendingSectors,
	"Total_Pending_Sectors":   MeaningPendingSectors,
	"Offline_Uncorrectable":   MeaningOfflineUncorrectable,
	"SSD_Life_Left":           MeaningLifeLeft,
	"SSD_Life_Left_Perc":      MeaningLifeLeft,
	"Percent_Lifetime_Remain": MeaningLifeLeft,
	"Remaining_Lifetime_Perc": MeaningLifeLeft,
	"Perc_Rated_Life_Remain":  MeaningLifeLeft,
	"Percent_Life_Remaining":  MeaningLifeLeft,
	"PCT_Life_Remaining":      MeaningLifeLeft,
	"SSD_Remaining_Life_Perc": MeaningLifeLeft,
	"Lifetime_Left":           MeaningLifeLeft,
	"Media_Wearout_Indicator": MeaningLifeLeft,
	"UDMA_CRC_Error_Count":    MeaningCRCErrors,
	"CRC_Error_Count":         MeaningCRCErrors,
	"SATA_CRC_Error_Count":    MeaningCRCErrors,
	"SATA_CRC_Error":          MeaningCRCErrors,
	"SATA_FIS_CRC_Errors":     MeaningCRCErrors,
	"CRC_Errors":              MeaningCRCErrors,
	"SATA_Error_Ct_CRC":       MeaningCRCErrors,
}

// Meaning returns what the attribute's drive database name says it holds, 0
// when it carries none of the known meanings.
func (a *Attribute) Meaning() Meaning { return meanings[a.Name] }

// WithMeaning returns the attributes carrying m, in page order.
func (as Attributes) WithMeaning(m Meaning) []*Attribute {
	var out []*Attribute
	for i := range as {
		if as[i].Meaning() == m {
			out = append(out, &as[i])
		}
	}
	return out
}

// First returns the first attribute carrying m, in page order.
func (as Attributes) First(m Meaning) (*Attribute, bool) {
	for i := range as {
		if as[i].Meaning() == m {
			return &as[i], true
		}
	}
	return nil, false
}

// LifeLeft returns the remaining rated endurance in percent (0-100) from the
// first attribute meaning life left, and that attribute.
func (as Attributes) LifeLeft() (int, *Attribute, bool) {
	for _, a := range as.WithMeaning(MeaningLifeLeft) {
		if a.Value <= 100 {
			return int(a.Value), a, true
		}
	}
	return 0, nil, false
}
