package api

import "encoding/json"

// Group, versions and kinds of the meta.k8s.io server-side rendering
// types, as clients name them in Accept headers and read them in
// apiVersion/kind.
const (
	MetaGroup                 = "meta.k8s.io"
	MetaV1                    = "meta.k8s.io/v1"
	MetaV1beta1               = "meta.k8s.io/v1beta1"
	KindTable                 = "Table"
	KindPartialObjectMetadata = "PartialObjectMetadata"
)

// Table is Kubernetes' meta.k8s.io/v1 Table: an object or a list rendered
// as rows of typed cells under column definitions, as `kubectl get` asks
// the server for it. Every row has one cell per column, in column order.
// ColumnDefinitions is nil on the second and later tables of a watch
// stream, where the client already has them.
type Table struct {
	TypeMeta          `json:",inline"`
	ListMeta          `json:"metadata"`
	ColumnDefinitions []TableColumnDefinition `json:"columnDefinitions"`
	Rows              []TableRow              `json:"rows"`
}

// TableColumnDefinition describes one column of a Table. Priority 0
// columns are always shown; priority 1 only with `-o wide`.
type TableColumnDefinition struct {
	Name        string `json:"name"`
	Type        string `json:"type"`   // "string", "integer", "number", "boolean", "date"
	Format      string `json:"format"` // "name" for the column that names the object
	Description string `json:"description"`
	Priority    int32  `json:"priority"`
}

// TableRow is one object's row. Cells hold strings and int64s (float64s
// after a JSON round trip). Object is the object itself, its
// PartialObjectMetadata, or absent, as the request's includeObject asks.
type TableRow struct {
	Cells      []any               `json:"cells"`
	Conditions []TableRowCondition `json:"conditions,omitempty"`
	Object     json.RawMessage     `json:"object,omitempty"`
}

// TableRowCondition says something about a row as a whole; the only type
// Kubernetes defines is RowCompleted (a pod that has finished).
type TableRowCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// RowCompleted is the TableRowCondition type of a finished pod's row.
const RowCompleted = "Completed"

// Values of a Table request's includeObject parameter: what each row's
// Object carries. The default is IncludeMetadata.
const (
	IncludeNone     = "None"
	IncludeMetadata = "Metadata"
	IncludeObject   = "Object"
)

// PartialObjectMetadata is an object reduced to its metadata
// (meta.k8s.io/v1 PartialObjectMetadata), the default Object of a table
// row.
type PartialObjectMetadata struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata"`
}
