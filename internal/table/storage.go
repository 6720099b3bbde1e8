package table

import (
	"strings"
	"time"

	"github.com/skiffhq/skiff/api"
)

// storageLayout returns the tables of StatefulSet and the storage kinds,
// as Kubernetes prints them.
func storageLayout(kind string) (layout, bool) {
	switch kind {
	case "StatefulSet":
		return layout{row: typed(statefulSetRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Ready", "string", "Number of the pod with ready state"),
			col("Age", "string", descAge),
			wide("Containers", "string", descContainers),
			wide("Images", "string", descImages),
		}}, true
	case "PersistentVolumeClaim":
		return layout{row: typed(claimRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Status", "string", "The phase of the claim."),
			col("Volume", "string", "The volume bound to the claim."),
			col("Capacity", "string", "The actual capacity of the volume."),
			col("Access Modes", "string", "The access modes of the volume."),
			col("StorageClass", "string", "The storage class of the claim."),
			col("VolumeAttributesClass", "string", "The volume attributes class of the claim."),
			col("Age", "string", descAge),
			wide("VolumeMode", "string", "Whether the volume is a filesystem or a block device."),
		}}, true
	case "PersistentVolume":
		return layout{row: typed(volumeRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Capacity", "string", "The capacity of the volume."),
			col("Access Modes", "string", "The access modes of the volume."),
			col("Reclaim Policy", "string", "What happens to the volume when its claim is deleted."),
			col("Status", "string", "The phase of the volume."),
			col("Claim", "string", "The claim bound to the volume."),
			col("StorageClass", "string", "The storage class of the volume."),
			col("VolumeAttributesClass", "string", "The volume attributes class of the volume."),
			col("Reason", "string", "Why the volume is in its phase."),
			col("Age", "string", descAge),
			wide("VolumeMode", "string", "Whether the volume is a filesystem or a block device."),
		}}, true
	case "StorageClass":
		return layout{row: typed(storageClassRow), columns: []api.TableColumnDefinition{
			nameCol(),
			col("Provisioner", "string", "The provisioner that makes volumes of this class."),
			col("ReclaimPolicy", "string", "What happens to a volume of this class when its claim is deleted."),
			col("VolumeBindingMode", "string", "When a claim of this class is bound."),
			col("AllowVolumeExpansion", "string", "Whether claims of this class may grow."),
			col("Age", "string", descAge),
		}}, true
	}
	return layout{}, false
}

func statefulSetRow(s *api.StatefulSet, now time.Time) api.TableRow {
	desired := int32(1)
	if s.Spec.Replicas != nil {
		desired = *s.Spec.Replicas
	}
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return api.TableRow{Cells: []any{s.Name, itoa(s.Status.ReadyReplicas) + "/" + itoa(desired), Age(s.CreationTimestamp.Time, now), names, images}}
}

// accessModesCell abbreviates access modes as kubectl does ("RWO,ROX").
func accessModesCell(modes []string) string {
	short := map[string]string{"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
	out := make([]string, 0, len(modes))
	for _, m := range modes {
		out = append(out, short[m])
	}
	return strings.Join(out, ",")
}

func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func claimRow(c *api.PersistentVolumeClaim, now time.Time) api.TableRow {
	capacity := ""
	if q, ok := c.Status.Capacity[api.ResourceStorage]; ok {
		capacity = q.String()
	}
	modes := ""
	if c.Spec.VolumeName != "" {
		modes = accessModesCell(c.Status.AccessModes)
	}
	phase := c.Status.Phase
	if c.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	return api.TableRow{Cells: []any{c.Name, phase, c.Spec.VolumeName, capacity, modes, orEmpty(c.Spec.StorageClassName), OrUnset(""), Age(c.CreationTimestamp.Time, now), orEmpty(c.Spec.VolumeMode)}}
}

// OrUnset is "<unset>" for an empty value, as kubectl prints unset
// optional cells.
func OrUnset(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

func volumeRow(v *api.PersistentVolume, now time.Time) api.TableRow {
	capacity := ""
	if q, ok := v.Spec.Capacity[api.ResourceStorage]; ok {
		capacity = q.String()
	}
	claim := ""
	if r := v.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	phase := v.Status.Phase
	if v.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	return api.TableRow{Cells: []any{v.Name, capacity, accessModesCell(v.Spec.AccessModes), v.Spec.PersistentVolumeReclaimPolicy, phase, claim,
		v.Spec.StorageClassName, OrUnset(""), v.Status.Reason, Age(v.CreationTimestamp.Time, now), orEmpty(v.Spec.VolumeMode)}}
}

func storageClassRow(s *api.StorageClass, now time.Time) api.TableRow {
	name := s.Name
	if s.Annotations[api.AnnotationDefaultStorageClass] == "true" {
		name += " (default)"
	}
	expand := "false"
	if s.AllowVolumeExpansion != nil && *s.AllowVolumeExpansion {
		expand = "true"
	}
	return api.TableRow{Cells: []any{name, s.Provisioner, orEmpty(s.ReclaimPolicy), orEmpty(s.VolumeBindingMode), expand, Age(s.CreationTimestamp.Time, now)}}
}
