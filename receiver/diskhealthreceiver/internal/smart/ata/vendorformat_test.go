package ata

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seagatePacked are the presets newer drivedb.h revisions give Seagate's packed error rates (the
// Debian 12 drivedb.h leaves them raw48), added before smartctl's database as /etc/smart_drivedb.h
// would be.
const seagatePacked = `{ "Seagate packed error rates", "ST4000DM004-2CV104", "", "",
  "-v 1,raw24/raw32 -v 7,raw24/raw32 -v 195,raw24/raw32,ECC_On_the_Fly_Count -v 188,raw16" }`

// Vendor raw formats decoded from whole SMART READ DATA pages, through the
// drive database entry of a real model. Want strings are smartctl's
// RAW_VALUE column for the same bytes and format (its -v format semantics).
func TestVendorFormatsFromPages(t *testing.T) {
	add, err := ParseDriveDB([]byte(seagatePacked))
	require.NoError(t, err)
	db := smartctlDB(t).WithAdditions(add)
	withReserved := func(a RawAttribute, r byte) RawAttribute { a.Reserved = r; return a }
	attr := func(id uint8, value uint8, raw uint64) RawAttribute {
		return RawAttribute{ID: id, Flags: FlagOnline, Value: value, Worst: value, RawBytes: raw48(raw)}
	}
	type want struct {
		name, raw string
		value     int64
		format    Format
	}
	for _, tc := range []struct {
		what, model string
		attrs       []RawAttribute
		want        map[uint8]want
	}{
		{"Seagate packed error rates and command timeouts", "ST4000DM004-2CV104",
			[]RawAttribute{attr(1, 83, 0x0002_0BC6_F8FB), attr(7, 81, 0x0000_085A_3F63), attr(195, 83, 0x0003_0BC6_F8FB), attr(188, 100, 0x0001_0001_0000)},
			map[uint8]want{
				1:   {"Raw_Read_Error_Rate", "2/197589243", 2, FormatRaw24DivRaw32},
				7:   {"Seek_Error_Rate", "0/140132195", 0, FormatRaw24DivRaw32},
				195: {"ECC_On_the_Fly_Count", "3/197589243", 3, FormatRaw24DivRaw32},
				188: {"Command_Timeout", "1 1 0", 0, FormatRaw16},
			}},
		{"Seagate msec24hour32 power-on and head flying hours", "ST8000DM004-2CX188",
			[]RawAttribute{withReserved(attr(9, 86, 0x87_0000_3039|0xD6<<40), 0x12), attr(240, 100, 0x00_0000_2F00)},
			map[uint8]want{
				9:   {"Power_On_Hours", "12345h+20m+34.567s", 12345, FormatMsec24Hour32},
				240: {"Head_Flying_Hours", "12032h+00m+00.000s", 12032, FormatMsec24Hour32},
			}},
		{"Phison SSD life left and Not_In_Use 197", "PNY CS900 240GB SSD",
			[]RawAttribute{attr(231, 97, 97), attr(197, 100, 5), attr(241, 100, 1834), attr(242, 100, 977)},
			map[uint8]want{
				231: {"SSD_Life_Left", "97", 97, FormatRaw48},
				197: {"Not_In_Use", "5", 5, FormatRaw48},
				241: {"Lifetime_Writes_GiB", "1834", 1834, FormatRaw48},
				242: {"Lifetime_Reads_GiB", "977", 977, FormatRaw48},
			}},
		{"Crucial percent lifetime remaining", "CT1000MX500SSD1",
			[]RawAttribute{attr(202, 94, 6), attr(197, 100, 0), attr(246, 100, 29385630342)},
			map[uint8]want{
				202: {"Percent_Lifetime_Remain", "6", 6, FormatRaw48},
				197: {"Current_Pending_ECC_Cnt", "0", 0, FormatRaw48},
				246: {"Total_LBAs_Written", "29385630342", 29385630342, FormatRaw48},
			}},
		{"temperature with lifetime min/max", "ST4000DM004-2CV104",
			[]RawAttribute{attr(194, 31, 0x0000_2D12_001F), attr(190, 69, 0x0000_2D12_001F)},
			map[uint8]want{
				194: {"Temperature_Celsius", "31 (Min/Max 18/45)", 31, FormatTempMinMax},
				190: {"Airflow_Temperature_Cel", "31 (Min/Max 18/45)", 31, FormatTempMinMax},
			}},
		{"WDC temperature with over-temperature count", "WDC WD40EFRX-68N32N0",
			[]RawAttribute{attr(194, 115, 0x0002_3A14_0024)},
			map[uint8]want{194: {"Temperature_Celsius", "36 (Min/Max 20/58 #2)", 36, FormatTempMinMax}}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			data, err := ParseSMARTData(dataPage(tc.attrs...))
			require.NoError(t, err)
			p := db.LookupDrive(tc.model, "", 0)
			require.True(t, p.Known, tc.model)
			got := p.Decode(data, nil)
			for id, w := range tc.want {
				a, ok := got.Find(id)
				require.True(t, ok, "attribute %d", id)
				assert.Equal(t, w.name, a.Name, "attribute %d", id)
				assert.Equal(t, w.format, a.Raw.Format, "attribute %d", id)
				assert.Equal(t, w.raw, a.Raw.String(), "attribute %d", id)
				assert.Equal(t, w.value, a.Raw.Value, "attribute %d", id)
			}
		})
	}
	// The power-on time is exact, milliseconds included.
	data, err := ParseSMARTData(dataPage(RawAttribute{ID: 9, Value: 86, Worst: 86, Reserved: 0x12, RawBytes: raw48(0xD6_87_0000_3039)}))
	require.NoError(t, err)
	on, ok := lookup(t, "ST8000DM004-2CX188").Decode(data, nil).PowerOn()
	require.True(t, ok)
	assert.Equal(t, 12345*time.Hour+20*time.Minute+34567*time.Millisecond, on)
}

// Meanings follow the drive database, not the ID: a Phison SSD's 197 is no
// pending-sector count and its 231 is life left, while on a Crucial 202 is.
func TestMeaningsFollowTheDatabase(t *testing.T) {
	decode := func(model string, attrs ...RawAttribute) Attributes {
		data, err := ParseSMARTData(dataPage(attrs...))
		require.NoError(t, err)
		return lookup(t, model).Decode(data, nil)
	}
	phison := decode("PNY CS900 240GB SSD", RawAttribute{ID: 197, Value: 100, RawBytes: raw48(5)}, RawAttribute{ID: 231, Value: 97, RawBytes: raw48(97)})
	assert.Empty(t, phison.WithMeaning(MeaningPendingSectors))
	left, a, ok := phison.LifeLeft()
	require.True(t, ok)
	assert.Equal(t, 97, left)
	assert.Equal(t, uint8(231), a.ID)

	plain := decode("QEMU HARDDISK", RawAttribute{ID: 197, Value: 100, RawBytes: raw48(5)}, RawAttribute{ID: 231, Value: 40, RawBytes: raw48(40)})
	assert.Len(t, plain.WithMeaning(MeaningPendingSectors), 1)
	_, _, ok = plain.LifeLeft()
	assert.False(t, ok, "the default 231 is a temperature, not life left")

	crucial := decode("CT1000MX500SSD1", RawAttribute{ID: 202, Value: 94, RawBytes: raw48(6)}, RawAttribute{ID: 197, Value: 100, RawBytes: raw48(1)})
	left, _, ok = crucial.LifeLeft()
	require.True(t, ok)
	assert.Equal(t, 94, left, "normalized value: 94 % left (the raw 6 is percent used)")
	assert.Len(t, crucial.WithMeaning(MeaningPendingSectors), 1, "Current_Pending_ECC_Cnt is a pending count")
}
