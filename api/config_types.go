package api

// Namespace groups namespaced objects; "default" always exists.
type Namespace struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Spec       NamespaceSpec   `json:"spec,omitzero"`
	Status     NamespaceStatus `json:"status,omitzero"`
}

// NamespaceSpec holds a namespace's finalizers (stored only).
type NamespaceSpec struct {
	Finalizers []string `json:"finalizers,omitempty"`
}

// NamespaceStatus holds a namespace's phase: Active or Terminating.
type NamespaceStatus struct {
	Phase string `json:"phase,omitempty"`
}

// Secret holds sensitive data. Data values are base64 in JSON (Go []byte);
// StringData is write-only convenience merged into Data on write.
type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Type       string            `json:"type,omitempty"`
}

// ConfigMap holds non-sensitive configuration.
type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// Event records something that happened to an object, de-duplicated with
// a count as in Kubernetes core/v1.
type Event struct {
	TypeMeta            `json:",inline"`
	ObjectMeta          `json:"metadata"`
	InvolvedObject      ObjectReference `json:"involvedObject"`
	Reason              string          `json:"reason,omitempty"`
	Message             string          `json:"message,omitempty"`
	Source              EventSource     `json:"source,omitzero"`
	FirstTimestamp      Time            `json:"firstTimestamp,omitzero"`
	LastTimestamp       Time            `json:"lastTimestamp,omitzero"`
	Count               int32           `json:"count,omitempty"`
	Type                string          `json:"type,omitempty"` // Normal or Warning
	EventTime           MicroTime       `json:"eventTime,omitzero"`
	Action              string          `json:"action,omitempty"`
	ReportingController string          `json:"reportingComponent,omitempty"`
	ReportingInstance   string          `json:"reportingInstance,omitempty"`
}

// Event types.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// ObjectReference points at an object (Event.involvedObject).
type ObjectReference struct {
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}

// EventSource names the component that reported an event.
type EventSource struct {
	Component string `json:"component,omitempty"`
	Host      string `json:"host,omitempty"`
}
