// A string ext var and a code ext var.
{
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: std.extVar('ns') },
  spec: {
    replicas: std.extVar('replicas'),
    template: { spec: { containers: std.extVar('containers') } },
  },
}
