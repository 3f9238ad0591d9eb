{ secret: 'outside the root' }
