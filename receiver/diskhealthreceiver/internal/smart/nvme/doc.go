// Package nvme decodes the NVMe admin data the receiver reads: the
// SMART / Health Information log page (02h), Identify Controller (CNS 01h),
// Identify Namespace (CNS 00h), the Error Information log (01h), the
// Supported Log Pages log (00h), the Telemetry Controller-Initiated log
// header (08h), the OCP Datacenter SSD logs (C0h, C3h) and Amazon's
// performance statistics (D0h). Decoders take bytes only; PlanLogs decides
// from them which optional logs a controller is asked for.
package nvme // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/smart/nvme"

// Admin command opcodes, log identifiers and Identify CNS values of the only
// commands this project sends (NVMe Base 2.0). The read-only allowlist in
// package smart is built from them.
const (
	AdminGetLogPage = 0x02
	AdminIdentify   = 0x06

	LogError           = 0x01
	LogSMART           = 0x02
	LogFirmwareSlot    = 0x03
	LogCommandsEffects = 0x05
	LogDeviceSelfTest  = 0x06
	// LogSupportedLogs (NVMe 2.0) lists the log pages the controller keeps.
	LogSupportedLogs = 0x00
	// LogTelemetryController is the Telemetry Controller-Initiated log;
	// only its header is read.
	LogTelemetryController = 0x08

	CNSNamespace            = 0x00
	CNSController           = 0x01
	CNSActiveNamespaceList  = 0x02
	CNSNamespaceDescriptors = 0x03

	// GetLogRAE is Retain Asynchronous Event (CDW10 bit 15): the read
	// leaves the log's pending event for other readers.
	GetLogRAE = 1 << 15

	// NSIDAll addresses the controller as a whole (Get Log Page for the
	// controller-wide SMART log).
	NSIDAll = 0xFFFFFFFF
)

// Sizes of the data structures decoded here.
const (
	SMARTLogSize = 512
	IdentifySize = 4096
)
