package server

import (
	"fmt"
	"github.com/skiffhq/skiff/internal/atomicfile"

	"sigs.k8s.io/yaml"

	"github.com/skiffhq/skiff/api/client"
)

// Names inside the kubeconfig Run writes.
const (
	kcClusterName = "skiff"
	kcUserName    = "skiff-admin"
	kcContextName = "skiff"
)

// kubeconfig is the subset of kubectl's config file skiff writes.
type kubeconfig struct {
	APIVersion     string              `json:"apiVersion"`
	Kind           string              `json:"kind"`
	Clusters       []kubeconfigCluster `json:"clusters"`
	Users          []kubeconfigUser    `json:"users"`
	Contexts       []kubeconfigContext `json:"contexts"`
	CurrentContext string              `json:"current-context"`
}

type kubeconfigCluster struct {
	Name    string `json:"name"`
	Cluster struct {
		Server                   string `json:"server"`
		CertificateAuthorityData []byte `json:"certificate-authority-data"`
	} `json:"cluster"`
}

type kubeconfigUser struct {
	Name string `json:"name"`
	User struct {
		Token string `json:"token"`
	} `json:"user"`
}

type kubeconfigContext struct {
	Name    string `json:"name"`
	Context struct {
		Cluster string `json:"cluster"`
		User    string `json:"user"`
	} `json:"context"`
}

// writeClientConfigs writes the CLI's client config (skiff.yaml) and a
// kubeconfig for kubectl, both mode 0600, each replaced atomically: they
// are rewritten at every start because the URL follows the listen port.
func writeClientConfigs(clientPath, kubePath, url string, caPEM []byte, adminToken string) error {
	if err := client.WriteConfig(clientPath, client.Config{Server: url, CAData: caPEM, Token: adminToken}); err != nil {
		return fmt.Errorf("write %s: %w", clientPath, err)
	}
	kc := kubeconfig{APIVersion: "v1", Kind: "Config", CurrentContext: kcContextName}
	var c kubeconfigCluster
	c.Name = kcClusterName
	c.Cluster.Server = url
	c.Cluster.CertificateAuthorityData = caPEM
	var u kubeconfigUser
	u.Name = kcUserName
	u.User.Token = adminToken
	var x kubeconfigContext
	x.Name = kcContextName
	x.Context.Cluster, x.Context.User = kcClusterName, kcUserName
	kc.Clusters, kc.Users, kc.Contexts = []kubeconfigCluster{c}, []kubeconfigUser{u}, []kubeconfigContext{x}
	b, err := yaml.Marshal(kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	if _, err := atomicfile.ReplaceIfChanged(kubePath, b, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", kubePath, err)
	}
	return nil
}
