package nvme

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Kelvin is an NVMe temperature field. 0 means "not reported" (fabrics
// targets and some bridges report it), never -273 °C.
type Kelvin uint16

// Celsius converts to whole degrees Celsius the way smartctl and nvme-cli
// do (K - 273). ok is false when the field is 0 (absent).
func (k Kelvin) Celsius() (c int, ok bool) {
	if k == 0 {
		return 0, false
	}
	return int(k) - 273, true
}

// CriticalWarning is the SMART log's critical warning bit field.
type CriticalWarning uint8

// Critical warning bits (NVMe Base 2.0, SMART / Health Information log).
const (
	WarnSpareBelowThreshold CriticalWarning = 1 << 0 // available spare below threshold
	WarnTemperature         CriticalWarning = 1 << 1 // a temperature is beyond a threshold
	WarnReliability         CriticalWarning = 1 << 2 // NVM subsystem reliability degraded
	WarnReadOnly            CriticalWarning = 1 << 3 // media placed in read-only mode
	WarnVolatileBackup      CriticalWarning = 1 << 4 // volatile memory backup device failed
	WarnPMRReadOnly         CriticalWarning = 1 << 5 // persistent memory region read-only or unreliable
)

var warningNames = [...]string{
	"spare_below_threshold", "temperature", "reliability_degraded",
	"read_only", "volatile_backup_failed", "pmr_unreliable",
}

// Has reports whether every bit of w2 is set.
func (w CriticalWarning) Has(w2 CriticalWarning) bool { return w&w2 == w2 }

// Names lists the set bits by name; reserved bits 6-7 appear as bit6/bit7.
func (w CriticalWarning) Names() []string {
	var out []string
	for i := range 8 {
		if w&(1<<i) == 0 {
			continue
		}
		if i < len(warningNames) {
			out = append(out, warningNames[i])
		} else {
			out = append(out, fmt.Sprintf("bit%d", i))
		}
	}
	return out
}

func (w CriticalWarning) String() string {
	if w == 0 {
		return "none"
	}
	return strings.Join(w.Names(), ",")
}

// SMARTLog is the SMART / Health Information log page (02h).
type SMARTLog struct {
	CriticalWarning CriticalWarning
	// Temperature is the composite temperature.
	Temperature Kelvin
	// AvailableSpare and SpareThreshold are percentages. Emulated and
	// fabrics controllers report 0 for both, which is not an alarm.
	AvailableSpare uint8
	SpareThreshold uint8
	// PercentageUsed is the vendor's estimate of rated endurance consumed;
	// it may exceed 100 and stops at 255.
	PercentageUsed               uint8
	EnduranceGroupWarningSummary uint8

	// DataUnitsRead/Written count thousands of 512-byte units (see
	// BytesRead/BytesWritten).
	DataUnitsRead     Uint128
	DataUnitsWritten  Uint128
	HostReadCommands  Uint128
	HostWriteCommands Uint128
	// ControllerBusyMinutes is time spent busy with I/O, in minutes.
	ControllerBusyMinutes Uint128
	PowerCycles           Uint128
	PowerOnHours          Uint128
	UnsafeShutdowns       Uint128
	// MediaErrors counts unrecovered data integrity errors.
	MediaErrors Uint128
	// ErrorLogEntries counts error information log entries over the
	// controller's life, including those for rejected admin commands.
	ErrorLogEntries Uint128

	// WarningTempMinutes and CriticalTempMinutes are the minutes spent at or
	// above WCTEMP and CCTEMP.
	WarningTempMinutes  uint32
	CriticalTempMinutes uint32
	// TempSensors are sensors 1-8; 0 marks an absent sensor.
	TempSensors [8]Kelvin
	// ThermalTransitions and ThermalSeconds are per thermal management
	// temperature (TMT1, TMT2).
	ThermalTransitions [2]uint32
	ThermalSeconds     [2]uint32
}

// dataUnitBytes is the size of a data unit: 1000 blocks of 512 bytes.
const dataUnitBytes = 512000

// BytesRead converts DataUnitsRead to bytes, exactly (saturating at 2^128-1).
func (l *SMARTLog) BytesRead() Uint128 { return l.DataUnitsRead.MulUint64(dataUnitBytes) }

// BytesWritten converts DataUnitsWritten to bytes.
func (l *SMARTLog) BytesWritten() Uint128 { return l.DataUnitsWritten.MulUint64(dataUnitBytes) }

// ParseSMARTLog decodes the 512-byte SMART / Health Information log page.
func ParseSMARTLog(b []byte) (*SMARTLog, error) {
	if len(b) < SMARTLogSize {
		return nil, fmt.Errorf("nvme smart log: %d bytes, want %d", len(b), SMARTLogSize)
	}
	l := &SMARTLog{
		CriticalWarning:              CriticalWarning(b[0]),
		Temperature:                  Kelvin(binary.LittleEndian.Uint16(b[1:])),
		AvailableSpare:               b[3],
		SpareThreshold:               b[4],
		PercentageUsed:               b[5],
		EnduranceGroupWarningSummary: b[6],
		DataUnitsRead:                uint128At(b[32:]),
		DataUnitsWritten:             uint128At(b[48:]),
		HostReadCommands:             uint128At(b[64:]),
		HostWriteCommands:            uint128At(b[80:]),
		ControllerBusyMinutes:        uint128At(b[96:]),
		PowerCycles:                  uint128At(b[112:]),
		PowerOnHours:                 uint128At(b[128:]),
		UnsafeShutdowns:              uint128At(b[144:]),
		MediaErrors:                  uint128At(b[160:]),
		ErrorLogEntries:              uint128At(b[176:]),
		WarningTempMinutes:           binary.LittleEndian.Uint32(b[192:]),
		CriticalTempMinutes:          binary.LittleEndian.Uint32(b[196:]),
	}
	for i := range l.TempSensors {
		l.TempSensors[i] = Kelvin(binary.LittleEndian.Uint16(b[200+2*i:]))
	}
	for i := range 2 {
		l.ThermalTransitions[i] = binary.LittleEndian.Uint32(b[216+4*i:])
		l.ThermalSeconds[i] = binary.LittleEndian.Uint32(b[224+4*i:])
	}
	return l, nil
}
