/// The XML Schema every manifest is validated against, embedded so the tool needs no file beside it.
/// Checks a schema cannot express (files exist, names unique, `after` targets) are made by `ManifestLoader`.
enum ManifestSchema {
    static let xsd = """
    <?xml version="1.0" encoding="UTF-8"?>
    <xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
      <xs:simpleType name="nonEmpty">
        <xs:restriction base="xs:string"><xs:minLength value="1"/><xs:pattern value=".*\\S.*"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="seedMode">
        <xs:restriction base="xs:string">
          <xs:enumeration value="insert"/><xs:enumeration value="ignore"/><xs:enumeration value="upsert"/>
          <xs:enumeration value="replace"/><xs:enumeration value="sync"/>
        </xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="onChange">
        <xs:restriction base="xs:string"><xs:enumeration value="fail"/><xs:enumeration value="reapply"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="columnType">
        <xs:restriction base="xs:string">
          <xs:enumeration value="integer"/><xs:enumeration value="real"/><xs:enumeration value="text"/>
          <xs:enumeration value="blob"/><xs:enumeration value="boolean"/><xs:enumeration value="date"/>
          <xs:enumeration value="datetime"/>
        </xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="storage">
        <xs:restriction base="xs:string"><xs:enumeration value="text"/><xs:enumeration value="unix"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="onOff">
        <xs:restriction base="xs:string"><xs:enumeration value="on"/><xs:enumeration value="off"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="migrationFormat">
        <xs:restriction base="xs:string">
          <xs:enumeration value="plain"/><xs:enumeration value="goose"/><xs:enumeration value="sql-migrate"/>
          <xs:enumeration value="dbmate"/>
        </xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="trueFalse">
        <xs:restriction base="xs:string"><xs:enumeration value="true"/><xs:enumeration value="false"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="backend">
        <xs:annotation><xs:documentation>
          One backend whose plan holds the migrations (DatabaseBackend's raw values). A single value: without the
          attribute a migration is in every backend's plan, which with two backends is the only list worth writing.
        </xs:documentation></xs:annotation>
        <xs:restriction base="xs:string"><xs:enumeration value="sqlite"/><xs:enumeration value="postgresql"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="keep">
        <xs:annotation><xs:documentation>How many backups a backup directory keeps: 1 to 999999.</xs:documentation></xs:annotation>
        <xs:restriction base="xs:positiveInteger"><xs:pattern value="[1-9][0-9]{0,5}"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="transaction">
        <xs:restriction base="xs:string"><xs:enumeration value="file"/><xs:enumeration value="none"/></xs:restriction>
      </xs:simpleType>

      <xs:element name="manifest">
        <xs:complexType>
          <xs:choice minOccurs="0" maxOccurs="unbounded">
            <xs:element name="database">
              <xs:annotation><xs:documentation>
                Exactly one of path (a SQLite file) and url (a postgresql:// or postgres:// URI whose ${NAME}
                placeholders are filled from the environment when it is used); schema only with url. The loader
                checks what a schema cannot say: one of the two, the URI's scheme and placeholders. backup (a
                directory backups are taken into before migrate writes) and keep (how many it keeps) only with path.
              </xs:documentation></xs:annotation>
              <xs:complexType>
                <xs:attribute name="path" type="nonEmpty"/>
                <xs:attribute name="url" type="nonEmpty"/>
                <xs:attribute name="schema" type="nonEmpty"/>
                <xs:attribute name="backup" type="nonEmpty"/>
                <xs:attribute name="keep" type="keep"/>
              </xs:complexType>
            </xs:element>
            <xs:element name="migrations">
              <xs:complexType>
                <xs:choice minOccurs="0" maxOccurs="unbounded">
                  <xs:element name="migration">
                    <xs:complexType>
                      <xs:attribute name="file" type="nonEmpty" use="required"/>
                      <xs:attribute name="id" type="nonEmpty"/>
                      <xs:attribute name="transaction" type="transaction"/>
                      <xs:attribute name="foreignKeys" type="onOff"/>
                      <xs:attribute name="format" type="migrationFormat"/>
                      <xs:attribute name="backend" type="backend"/>
                      <xs:attribute name="repeatable" type="trueFalse"/>
                    </xs:complexType>
                  </xs:element>
                  <xs:element name="code">
                    <xs:annotation><xs:documentation>
                      A Swift code step the program registers (Migrator.register): name, unique in the manifest;
                      after, a migration of this same migrations element; version, its checksum (bumped: drift).
                    </xs:documentation></xs:annotation>
                    <xs:complexType>
                      <xs:attribute name="name" type="nonEmpty" use="required"/>
                      <xs:attribute name="after" type="nonEmpty" use="required"/>
                      <xs:attribute name="version" type="nonEmpty" use="required"/>
                    </xs:complexType>
                  </xs:element>
                </xs:choice>
                <xs:attribute name="directory" type="nonEmpty"/>
                <xs:attribute name="foreignKeys" type="onOff"/>
                <xs:attribute name="format" type="migrationFormat"/>
                <xs:attribute name="backend" type="backend"/>
                <xs:attribute name="repeatable" type="trueFalse"/>
              </xs:complexType>
            </xs:element>
            <xs:element name="seeds">
              <xs:complexType>
                <xs:sequence>
                  <xs:element name="seed" minOccurs="0" maxOccurs="unbounded">
                    <xs:complexType>
                      <xs:sequence>
                        <xs:element name="column" minOccurs="0" maxOccurs="unbounded">
                          <xs:complexType>
                            <xs:attribute name="name" type="nonEmpty" use="required"/>
                            <xs:attribute name="type" type="columnType"/>
                            <xs:attribute name="format" type="nonEmpty"/>
                            <xs:attribute name="storage" type="storage"/>
                          </xs:complexType>
                        </xs:element>
                      </xs:sequence>
                      <xs:attribute name="id" type="nonEmpty"/>
                      <xs:attribute name="file" type="nonEmpty" use="required"/>
                      <xs:attribute name="table" type="nonEmpty" use="required"/>
                      <xs:attribute name="after" type="nonEmpty"/>
                      <xs:attribute name="mode" type="seedMode"/>
                      <xs:attribute name="key" type="xs:string"/>
                      <xs:attribute name="onChange" type="onChange"/>
                      <xs:attribute name="context" type="nonEmpty"/>
                      <xs:attribute name="delimiter" type="xs:string"/>
                      <xs:attribute name="null" type="xs:string"/>
                    </xs:complexType>
                  </xs:element>
                </xs:sequence>
              </xs:complexType>
            </xs:element>
            <xs:element name="models">
              <xs:complexType>
                <xs:sequence>
                  <xs:element name="model" minOccurs="0" maxOccurs="unbounded">
                    <xs:complexType>
                      <xs:choice minOccurs="0" maxOccurs="unbounded">
                        <xs:element name="property">
                          <xs:complexType>
                            <xs:attribute name="name" type="nonEmpty" use="required"/>
                            <xs:attribute name="column" type="nonEmpty"/>
                            <xs:attribute name="dateStorage">
                              <xs:simpleType>
                                <xs:restriction base="xs:string">
                                  <xs:enumeration value="iso8601Text"/>
                                  <xs:enumeration value="unixSeconds"/>
                                  <xs:enumeration value="julianDay"/>
                                </xs:restriction>
                              </xs:simpleType>
                            </xs:attribute>
                          </xs:complexType>
                        </xs:element>
                        <xs:element name="hasMany">
                          <xs:complexType>
                            <xs:attribute name="property" type="nonEmpty" use="required"/>
                            <xs:attribute name="model" type="nonEmpty" use="required"/>
                            <xs:attribute name="foreignKey" type="nonEmpty" use="required"/>
                            <xs:attribute name="orderBy" type="nonEmpty"/>
                            <xs:attribute name="onRemove">
                              <xs:simpleType>
                                <xs:restriction base="xs:string">
                                  <xs:enumeration value="keep"/>
                                  <xs:enumeration value="delete"/>
                                  <xs:enumeration value="detach"/>
                                </xs:restriction>
                              </xs:simpleType>
                            </xs:attribute>
                          </xs:complexType>
                        </xs:element>
                        <xs:element name="belongsTo">
                          <xs:complexType>
                            <xs:attribute name="property" type="nonEmpty" use="required"/>
                            <xs:attribute name="model" type="nonEmpty" use="required"/>
                            <xs:attribute name="foreignKey" type="nonEmpty" use="required"/>
                          </xs:complexType>
                        </xs:element>
                      </xs:choice>
                      <xs:attribute name="type" type="nonEmpty" use="required"/>
                      <xs:attribute name="table" type="nonEmpty"/>
                      <xs:attribute name="primaryKey" type="xs:string"/>
                    </xs:complexType>
                  </xs:element>
                </xs:sequence>
              </xs:complexType>
            </xs:element>
            <xs:element name="include">
              <xs:complexType><xs:attribute name="manifest" type="nonEmpty" use="required"/></xs:complexType>
            </xs:element>
          </xs:choice>
          <xs:attribute name="version" use="required">
            <xs:simpleType><xs:restriction base="xs:string"><xs:enumeration value="1"/></xs:restriction></xs:simpleType>
          </xs:attribute>
        </xs:complexType>
      </xs:element>
    </xs:schema>
    """
}
