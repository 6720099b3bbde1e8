package kubectl

import (
	"fmt"
	"strings"
)

// Manifests as a user would write them, in YAML, for kubectl -f -.

func podYAML(ns, name, node string) string {
	nodeLine := ""
	if node != "" {
		nodeLine = "\n  nodeName: " + node
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels: {app: %s}
spec:%s
  containers:
  - name: main
    image: busybox:1.36
    command: ["sleep", "3600"]
`, name, ns, name, nodeLine)
}

func deploymentYAML(ns, name string, replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s
  namespace: %[1]s
  labels: {app: %[2]s}
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: web
        image: %[4]s
        ports:
        - containerPort: 80
`, ns, name, replicas, image)
}

func daemonSetYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  selector:
    matchLabels: {app: %[2]s}
  template:
    metadata:
      labels: {app: %[2]s}
    spec:
      containers:
      - name: agent
        image: busybox:1.36
`, ns, name)
}

func configMapYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: %s
data:
  greeting: hello
`, name, ns)
}

func secretYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: %s
  namespace: %s
type: Opaque
stringData:
  password: s3cret
`, name, ns)
}

func nodeYAML(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %[1]s
  labels: {kubernetes.io/hostname: %[1]s}
`, name)
}

// eventYAML is an event about pod (uid may be empty).
func eventYAML(ns, name, pod, uid string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Event
metadata:
  name: %s
  namespace: %s
involvedObject:
  kind: Pod
  name: %s
  namespace: %s
  uid: "%s"
reason: Scheduled
message: assigned to a node
type: Normal
count: 1
source: {component: e2e}
`, name, ns, pod, ns, uid)
}

func replicaSetYAML(ns, name string) string {
	return strings.Replace(daemonSetYAML(ns, name), "kind: DaemonSet", "kind: ReplicaSet", 1)
}

func jobYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: work
        image: busybox:1.36
`, ns, name)
}

func cronJobYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: batch/v1
kind: CronJob
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: work
            image: busybox:1.36
`, ns, name)
}

func statefulSetYAML(ns, name string) string {
	return strings.Replace(daemonSetYAML(ns, name), "kind: DaemonSet", "kind: StatefulSet", 1)
}

func claimYAML(ns, name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %[2]s
  namespace: %[1]s
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 1Gi}
`, ns, name)
}
