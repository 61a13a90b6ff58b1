package controllers

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/kube-lite/kube-lite/pkg/controller/manager"
)

// TestForegroundDeletionOfAnOwnershipCycle: objects that own each other,
// each blocking its owner's deletion, still go when one of them is deleted
// in the foreground, as upstream's collector breaks such a cycle instead of
// leaving every object of it waiting for the next one forever.
func TestForegroundDeletionOfAnOwnershipCycle(t *testing.T) {
	c := start(t, func(o *manager.Options) { o.Controllers = []string{"garbagecollector"} })
	ctx := context.Background()
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d objects", size), func(t *testing.T) {
			// cycle-N-0 is owned by cycle-N-1, ..., the last by cycle-N-0.
			cms := make([]*v1.ConfigMap, size)
			for i := range cms {
				cm, err := c.client.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cycle-%d-%d", size, i)}}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cms[i] = cm
			}
			for i, cm := range cms {
				owner := cms[(i+1)%size]
				err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
					cur, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					cur.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(true)}}
					_, err = c.client.CoreV1().ConfigMaps(ns).Update(ctx, cur, metav1.UpdateOptions{})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := c.client.CoreV1().ConfigMaps(ns).Delete(ctx, cms[0].Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
				t.Fatal(err)
			}
			for _, cm := range cms {
				waitFor(t, cm.Name+" to go", func() (bool, error) {
					_, err := c.client.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, nil
					}
					return false, err
				})
			}
		})
	}
}
