module github.com/hybroute/hybroute

go 1.26.8

require github.com/stretchr/testify v1.12.1 // indirect
