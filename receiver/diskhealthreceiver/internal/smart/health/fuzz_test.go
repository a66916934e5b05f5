package health

import (
	"testing"

	"github.com/diskhealth/diskhealth/internal/testkit"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/ata"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"
)

// snapshotFrom turns fuzz bytes into a snapshot through the real decoders:
// a SMART data page (checksum fixed up) and an NVMe SMART log.
func snapshotFrom(db *ata.DriveDB, page, log []byte, model string) Snapshot {
	var s Snapshot
	if len(page) == ata.PageSize {
		p := append([]byte(nil), page...)
		var sum byte
		for _, c := range p[:ata.PageSize-1] {
			sum += c
		}
		p[ata.PageSize-1] = -sum
		if d, err := ata.ParseSMARTData(p); err == nil {
			s.ATA = &ATA{Attributes: db.LookupDrive(model, "", 0).Decode(d, nil), Status: ata.SMARTStatus(page[0] % 3)}
		}
	}
	if l, err := nvme.ParseSMARTLog(log); err == nil {
		s.NVMe = &NVMe{Log: *l, WarningTemp: 343, CriticalTemp: 373}
	}
	return s
}

func FuzzEvaluate(f *testing.F) {
	page := make([]byte, ata.PageSize)
	copy(page[2:], []byte{197, 0x12, 0, 100, 100, 3, 0, 0, 0, 0, 0, 0, 188, 0x32, 0, 100, 100, 0, 0, 5, 0, 2, 0, 0})
	log := make([]byte, nvme.SMARTLogSize)
	log[0], log[1], log[2] = 4, 0x60, 0x01
	f.Add(page, log, page, log, "ST4000DM004-2CV104")
	f.Add([]byte{}, []byte{}, page, log, "")
	db := testkit.ParsedDriveDBH(f, ata.ParseDriveDB)
	f.Fuzz(func(t *testing.T, page1, log1, page2, log2 []byte, model string) {
		s1, s2 := snapshotFrom(db, page1, log1, model), snapshotFrom(db, page2, log2, model)
		v1, h1 := Evaluate(History{}, s1)
		v2, h2 := Evaluate(h1, s2)
		for _, v := range []Verdict{v1, v2} {
			worst := OK
			for _, r := range v.Reasons {
				worst = max(worst, r.State)
				if r.Text == "" || r.Subject == "" {
					t.Fatalf("undocumented reason %+v", r)
				}
			}
			if v.State != worst {
				t.Fatalf("state %s, worst reason %s", v.State, worst)
			}
			for i, e := range v.Events {
				if e.Kind == StateChanged && (i != 0 || e.Old == e.New) {
					t.Fatalf("state change event %d: %+v", i, e)
				}
				if e.New != v.State || e.Text == "" {
					t.Fatalf("event %+v for state %s", e, v.State)
				}
			}
		}
		if h2.State() != v2.State {
			t.Fatal("history does not remember the state")
		}
		// Reading the same thing again is not news.
		v3, _ := Evaluate(h2, s2)
		if len(v3.Events) != 0 || v3.State != v2.State {
			t.Fatalf("repeat evaluation: %s -> %s with events %+v", v2.State, v3.State, v3.Events)
		}
	})
}
