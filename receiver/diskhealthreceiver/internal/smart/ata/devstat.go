package ata

import (
	"encoding/binary"
	"fmt"
)

// Stat names one device statistic: a page of the device statistics log and
// a byte offset within it (ACS-4 "Device Statistics log").
type Stat struct {
	Page   uint8
	Offset uint16
}

// Statistics the receiver uses. Temperatures are signed 8-bit °C.
var (
	StatLifetimePowerOnResets = Stat{1, 0x08}
	StatPowerOnHours          = Stat{1, 0x10}
	StatLogicalSectorsWritten = Stat{1, 0x18}
	StatLogicalSectorsRead    = Stat{1, 0x28}
	StatReallocatedSectors    = Stat{3, 0x20}
	StatReportedUncorrectable = Stat{4, 0x08}
	StatCurrentTemperature    = Stat{5, 0x08}
	StatHighestTemperature    = Stat{5, 0x20}
	StatLowestTemperature     = Stat{5, 0x28}
	StatMaxOperatingTemp      = Stat{5, 0x58}
	StatMinOperatingTemp      = Stat{5, 0x68}
	StatInterfaceCRCErrors    = Stat{6, 0x18}
	StatPercentageUsed        = Stat{7, 0x08}
)

// temperatureStat reports whether a statistic is a signed byte in °C.
func temperatureStat(s Stat) bool { return s.Page == 5 && s.Offset != 0x50 && s.Offset != 0x60 }

// DeviceStatistics holds the supported and valid entries of the device
// statistics log pages that were read.
type DeviceStatistics struct {
	values map[Stat]uint64
}

// Statistic flag bits in the top byte of each 8-byte entry.
const (
	statSupported = 1 << 63
	statValid     = 1 << 62
)

// ParseDeviceStatistics decodes one or more 512-byte device statistics log
// pages (log 04h, as read by READ LOG EXT or SMART READ LOG). Page 0, the
// list of supported pages, carries no statistics and is skipped. Each page
// names itself in its header, so pages may come in any order.
func ParseDeviceStatistics(b []byte) (*DeviceStatistics, error) {
	if len(b) == 0 || len(b)%PageSize != 0 {
		return nil, fmt.Errorf("device statistics: %d bytes is not a whole number of %d-byte pages", len(b), PageSize)
	}
	ds := &DeviceStatistics{values: make(map[Stat]uint64)}
	for p := 0; p < len(b); p += PageSize {
		page := b[p : p+PageSize]
		header := binary.LittleEndian.Uint64(page)
		rev, num := uint16(header), uint8(header>>16)
		if num == 0 {
			continue
		}
		if rev == 0 {
			return nil, fmt.Errorf("device statistics: page %d has revision 0 (page not supported or not read)", num)
		}
		for off := 8; off < PageSize; off += 8 {
			q := binary.LittleEndian.Uint64(page[off:])
			if q&statSupported == 0 || q&statValid == 0 {
				continue
			}
			ds.values[Stat{num, uint16(off)}] = q & (1<<48 - 1)
		}
	}
	return ds, nil
}

// Get returns a statistic's value when the drive marked it supported and
// valid. Temperatures come back as their raw byte; use Temperature for °C.
func (ds *DeviceStatistics) Get(s Stat) (uint64, bool) {
	if ds == nil {
		return 0, false
	}
	v, ok := ds.values[s]
	return v, ok
}

// Temperature returns a temperature statistic in °C. The byte 80h means
// "no value" and is reported as absent.
func (ds *DeviceStatistics) Temperature(s Stat) (int, bool) {
	v, ok := ds.Get(s)
	if !ok || !temperatureStat(s) || byte(v) == 0x80 {
		return 0, false
	}
	return int(int8(byte(v))), true
}
