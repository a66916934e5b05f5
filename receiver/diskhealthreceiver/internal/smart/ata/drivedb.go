package ata

import (
	"regexp"
	"strings"
)

// AttrDef says how to name and decode one attribute.
type AttrDef struct {
	Name   string
	Format Format
	// ByteOrder overrides the format's default byte order ("" = default).
	ByteOrder string
}

// defaultDefs is what an attribute ID means when no drive family says
// otherwise. Names follow smartctl's so dashboards built on smartctl output
// keep working; formats are the ones whose raw bytes are known to be packed.
var defaultDefs = map[uint8]AttrDef{
	1:   {Name: "Raw_Read_Error_Rate"},
	2:   {Name: "Throughput_Performance"},
	3:   {Name: "Spin_Up_Time", Format: FormatRaw16OptAvg16},
	4:   {Name: "Start_Stop_Count"},
	5:   {Name: "Reallocated_Sector_Ct", Format: FormatRaw16OptRaw16},
	6:   {Name: "Read_Channel_Margin"},
	7:   {Name: "Seek_Error_Rate"},
	8:   {Name: "Seek_Time_Performance"},
	9:   {Name: "Power_On_Hours", Format: FormatRaw24OptRaw8},
	10:  {Name: "Spin_Retry_Count"},
	11:  {Name: "Calibration_Retry_Count"},
	12:  {Name: "Power_Cycle_Count"},
	13:  {Name: "Read_Soft_Error_Rate"},
	175: {Name: "Program_Fail_Count_Chip"},
	176: {Name: "Erase_Fail_Count_Chip"},
	177: {Name: "Wear_Leveling_Count"},
	178: {Name: "Used_Rsvd_Blk_Cnt_Chip"},
	179: {Name: "Used_Rsvd_Blk_Cnt_Tot"},
	180: {Name: "Unused_Rsvd_Blk_Cnt_Tot"},
	181: {Name: "Program_Fail_Cnt_Total"},
	182: {Name: "Erase_Fail_Count_Total"},
	183: {Name: "Runtime_Bad_Block"},
	184: {Name: "End-to-End_Error"},
	187: {Name: "Reported_Uncorrect"},
	188: {Name: "Command_Timeout"},
	189: {Name: "High_Fly_Writes"},
	190: {Name: "Airflow_Temperature_Cel", Format: FormatTempMinMax},
	191: {Name: "G-Sense_Error_Rate"},
	192: {Name: "Power-Off_Retract_Count"},
	193: {Name: "Load_Cycle_Count"},
	194: {Name: "Temperature_Celsius", Format: FormatTempMinMax},
	195: {Name: "Hardware_ECC_Recovered"},
	196: {Name: "Reallocated_Event_Count", Format: FormatRaw16OptRaw16},
	197: {Name: "Current_Pending_Sector"},
	198: {Name: "Offline_Uncorrectable"},
	199: {Name: "UDMA_CRC_Error_Count"},
	200: {Name: "Multi_Zone_Error_Rate"},
	201: {Name: "Soft_Read_Error_Rate"},
	202: {Name: "Data_Address_Mark_Errs"},
	203: {Name: "Run_Out_Cancel"},
	204: {Name: "Soft_ECC_Correction"},
	205: {Name: "Thermal_Asperity_Rate"},
	206: {Name: "Flying_Height"},
	207: {Name: "Spin_High_Current"},
	208: {Name: "Spin_Buzz"},
	209: {Name: "Offline_Seek_Performnce"},
	220: {Name: "Disk_Shift"},
	221: {Name: "G-Sense_Error_Rate"},
	222: {Name: "Loaded_Hours"},
	223: {Name: "Load_Retry_Count"},
	224: {Name: "Load_Friction"},
	225: {Name: "Load_Cycle_Count"},
	226: {Name: "Load-in_Time"},
	227: {Name: "Torq-amp_Count"},
	228: {Name: "Power-off_Retract_Count"},
	230: {Name: "Head_Amplitude"},
	231: {Name: "Temperature_Celsius", Format: FormatTempMinMax},
	232: {Name: "Available_Reservd_Space"},
	233: {Name: "Media_Wearout_Indicator"},
	240: {Name: "Head_Flying_Hours", Format: FormatRaw24OptRaw8},
	241: {Name: "Total_LBAs_Written"},
	242: {Name: "Total_LBAs_Read"},
	250: {Name: "Read_Error_Retry_Rate"},
	254: {Name: "Free_Fall_Sensor"},
}

// unknownName names attributes that neither table knows.
const unknownName = "Unknown_Attribute"

// family is one drive database entry: a model match and the attributes that
// differ from the defaults on those drives. The first matching entry wins.
type family struct {
	name string
	// models are exact model numbers; each also matches with any "-suffix"
	// (Seagate appends a build code: ST4000DM004-2CV104).
	models []string
	// pattern, when set, matches whole model strings.
	pattern *regexp.Regexp
	defs    map[uint8]AttrDef
}

func (f *family) matches(model string) bool {
	for _, m := range f.models {
		if model == m || strings.HasPrefix(model, m+"-") {
			return true
		}
	}
	return f.pattern != nil && f.pattern.MatchString(model)
}

// seagatePacked is how Seagate hard disks pack their counters: 1, 7 and 195
// hold errors in the high bits above a 32-bit operation count, and 188 holds
// three 16-bit counters of which word 0 is the timeout count. Read as plain
// 48-bit numbers they look like millions of errors (the false alarms
// smartctl_exporter and Scrutiny users keep reporting).
var seagatePacked = map[uint8]AttrDef{
	1:   {Name: "Raw_Read_Error_Rate", Format: FormatRaw24DivRaw32},
	7:   {Name: "Seek_Error_Rate", Format: FormatRaw24DivRaw32},
	188: {Name: "Command_Timeout", Format: FormatRaw16},
	195: {Name: "Hardware_ECC_Recovered", Format: FormatRaw24DivRaw32},
}

// with returns base plus extra (extra wins), leaving both untouched.
func with(base, extra map[uint8]AttrDef) map[uint8]AttrDef {
	m := make(map[uint8]AttrDef, len(base)+len(extra))
	for k, v := range base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// families is the built-in drive database: the common cases only. Model
// lists and formats are facts gathered from drive documentation and
// smartmontools' database; the table itself is this project's.
var families = []family{
	{
		name:   "Seagate BarraCuda 3.5 (SMR)",
		models: []string{"ST2000DM005", "ST2000DM008", "ST2000DM009", "ST3000DM007", "ST4000DM004", "ST4000DM005", "ST6000DM003", "ST8000DM004"},
		defs: with(seagatePacked, map[uint8]AttrDef{
			9:   {Name: "Power_On_Hours", Format: FormatMsec24Hour32},
			200: {Name: "Pressure_Limit"},
			240: {Name: "Head_Flying_Hours", Format: FormatMsec24Hour32},
		}),
	},
	{
		name:   "Seagate BarraCuda 3.5 (CMR)",
		models: []string{"ST500DM009", "ST1000DM010", "ST2000DM006", "ST2000DM007", "ST3000DM008", "ST3000DM009", "ST4000DM006", "ST6000DM004", "ST8000DM005", "ST10000DM0004", "ST12000DM0007"},
		defs: with(seagatePacked, map[uint8]AttrDef{
			200: {Name: "Pressure_Limit"},
			240: {Name: "Head_Flying_Hours", Format: FormatMsec24Hour32},
		}),
	},
	{
		name:    "Seagate IronWolf",
		pattern: regexp.MustCompile(`^ST[0-9]+VN[0-9A-Z]{3,4}(-.*)?$`),
		defs: with(seagatePacked, map[uint8]AttrDef{
			240: {Name: "Head_Flying_Hours", Format: FormatMsec24Hour32},
		}),
	},
	{
		name:    "Seagate Exos / Enterprise Capacity",
		pattern: regexp.MustCompile(`^ST[0-9]+NM[0-9A-Z]{3,4}(-.*)?$`),
		defs: with(seagatePacked, map[uint8]AttrDef{
			240: {Name: "Head_Flying_Hours", Format: FormatMsec24Hour32},
		}),
	},
	{
		// Every other Seagate hard disk model number: ST, capacity, two
		// letters, a 3-4 character code (ST3000DM001, ST500LM030, ST31000524AS).
		name:    "Seagate (other hard disks)",
		pattern: regexp.MustCompile(`^ST[0-9]+[A-Z]{2}[0-9A-Z]{0,4}(-.*)?$`),
		defs:    seagatePacked,
	},
	{
		name:    "Samsung SATA SSD",
		pattern: regexp.MustCompile(`^Samsung SSD 8[3-7]0 .*$`),
		defs: map[uint8]AttrDef{
			177: {Name: "Wear_Leveling_Count"},
			179: {Name: "Used_Rsvd_Blk_Cnt_Tot"},
			181: {Name: "Program_Fail_Cnt_Total"},
			182: {Name: "Erase_Fail_Count_Total"},
			183: {Name: "Runtime_Bad_Block"},
			187: {Name: "Uncorrectable_Error_Cnt"},
			195: {Name: "ECC_Error_Rate"},
			199: {Name: "CRC_Error_Count"},
			235: {Name: "POR_Recovery_Count"},
			241: {Name: "Total_LBAs_Written"},
		},
	},
	{
		name:    "Crucial/Micron MX500",
		pattern: regexp.MustCompile(`^(Crucial_)?CT[0-9]+MX500SSD[0-9A-Z]*$`),
		defs: map[uint8]AttrDef{
			5:   {Name: "Reallocate_NAND_Blk_Cnt"},
			173: {Name: "Ave_Block-Erase_Count"},
			174: {Name: "Unexpect_Power_Loss_Ct"},
			197: {Name: "Current_Pending_ECC_Cnt"},
			202: {Name: "Percent_Lifetime_Remain"},
			246: {Name: "Total_LBAs_Written"},
			247: {Name: "Host_Program_Page_Count"},
			248: {Name: "FTL_Program_Page_Count"},
		},
	},
	{
		name:    "Intel SATA SSD",
		pattern: regexp.MustCompile(`^INTEL SSD(SA|SC)[0-9A-Z]+$`),
		defs: map[uint8]AttrDef{
			9:   {Name: "Power_On_Hours_and_Msec", Format: FormatMsec24Hour32},
			225: {Name: "Host_Writes_32MiB"},
			226: {Name: "Workld_Media_Wear_Indic"},
			227: {Name: "Workld_Host_Reads_Perc"},
			228: {Name: "Workload_Minutes"},
			232: {Name: "Available_Reservd_Space"},
			233: {Name: "Media_Wearout_Indicator"},
			241: {Name: "Host_Writes_32MiB"},
			242: {Name: "Host_Reads_32MiB"},
		},
	},
	{
		name:    "HGST/WDC Ultrastar (helium)",
		pattern: regexp.MustCompile(`^(HGST |WDC )?HU[HS][0-9A-Z]{6}[A-Z]{2}[0-9A-Z]{3,4}$`),
		defs: map[uint8]AttrDef{
			22: {Name: "Helium_Level"},
		},
	},
}

// Preset is what the drive database says about one drive model.
type Preset struct {
	// Family is the matched drive family, "" when only defaults apply.
	Family string
	defs   map[uint8]AttrDef
}

// Lookup finds the drive family of a model number in the built-in database.
func Lookup(model string) Preset {
	for i := range families {
		if families[i].matches(model) {
			return Preset{Family: families[i].name, defs: families[i].defs}
		}
	}
	return Preset{}
}

// Def returns the name and format of attribute id on this drive.
func (p Preset) Def(id uint8) AttrDef {
	if d, ok := p.defs[id]; ok {
		return d
	}
	if d, ok := defaultDefs[id]; ok {
		return d
	}
	return AttrDef{Name: unknownName}
}

// Decode names and decodes every attribute of a SMART data page, attaching
// its threshold when the thresholds page is known (th may be nil when that
// page was unreadable; the attributes then carry no threshold).
func (p Preset) Decode(data *SMARTData, th *Thresholds) Attributes {
	out := make(Attributes, 0, len(data.Attributes))
	for _, ra := range data.Attributes {
		def := p.Def(ra.ID)
		a := Attribute{RawAttribute: ra, Name: def.Name, Raw: DecodeRaw(ra, def.Format, def.ByteOrder)}
		a.Threshold, a.HasThreshold = th.Lookup(ra.ID)
		out = append(out, a)
	}
	return out
}
