[
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
  { apiVersion: 'v1', kind: 'ServiceAccount',
    metadata: { name: 'web', namespace: 'shop' } },
]
