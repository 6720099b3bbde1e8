package api

// WatchEvent is one line of a watch stream.
type WatchEvent struct {
	Type   string `json:"type"` // ADDED, MODIFIED, DELETED, BOOKMARK or ERROR
	Object any    `json:"object"`
}

// Watch event types.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
	Error    = "ERROR"
)

// List is the generic shape of every XxxList: kind, apiVersion, the
// revision read at, and the items.
type List[T any] struct {
	TypeMeta `json:",inline"`
	ListMeta `json:"metadata"`
	Items    []T `json:"items"`
}

// Lists of each kind.
type (
	PodList                   = List[Pod]
	NodeList                  = List[Node]
	NamespaceList             = List[Namespace]
	EventList                 = List[Event]
	SecretList                = List[Secret]
	ConfigMapList             = List[ConfigMap]
	DeploymentList            = List[Deployment]
	DaemonSetList             = List[DaemonSet]
	ReplicaSetList            = List[ReplicaSet]
	JobList                   = List[Job]
	CronJobList               = List[CronJob]
	PodDisruptionBudgetList   = List[PodDisruptionBudget]
	StatefulSetList           = List[StatefulSet]
	PersistentVolumeClaimList = List[PersistentVolumeClaim]
	PersistentVolumeList      = List[PersistentVolume]
	StorageClassList          = List[StorageClass]

	ServiceList       = List[Service]
	EndpointsList     = List[Endpoints]
	EndpointSliceList = List[EndpointSlice]

	ServiceAccountList     = List[ServiceAccount]
	RoleList               = List[Role]
	RoleBindingList        = List[RoleBinding]
	ClusterRoleList        = List[ClusterRole]
	ClusterRoleBindingList = List[ClusterRoleBinding]
)
